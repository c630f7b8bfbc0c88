package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gantry-dev/gantry/internal/devcluster/simworkload"
)

// stepStatus is the data-status of a step row of the run page, "" when absent.
func (b *Browser) stepStatus(n int) string {
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(
		`(function(){var e=document.querySelector('[data-testid="step-%d"]');return e?e.getAttribute("data-status"):"";})()`, n)))
	if err != nil {
		return ""
	}
	return s
}

// runStatus is the data-status of the run page's verdict, "" when absent.
func (b *Browser) runStatus() string {
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](
		`(function(){var e=document.querySelector('[data-testid="run-status"]');return e?e.getAttribute("data-status"):"";})()`))
	if err != nil {
		return ""
	}
	return s
}

// The seeded H100 definition (deploy/local/acceptance.yaml, team vision) run
// from the pool's page by an admin: the steps turn passed one after the
// other on the same page (the live fragment), and the report reads as the
// simulated workload behaved.
func TestAdminRunsPoolAcceptanceAndReadsTheReport(t *testing.T) {
	p := StartPortal(t,
		WithEnv("GANTRY_SEED_TEMPLATES", filepath.Join(stackRoot(t), "deploy", "templates")),
		WithEnv("GANTRY_ACCEPTANCE_INTERVAL", "500ms"),
		WithEnv("GANTRY_ACCEPTANCE_STEP_TIMEOUT", "3m"))
	p.Stack.SimulateWorkloads(t, "team-vision", simworkload.DefaultFigures(), simworkload.DefaultTimings())
	b := NewBrowser(t, p)
	b.LoginAs("erin")

	b.Open("/pools/h100-sxm-ib-training/acceptance")
	assert.Contains(t, b.TestIDText("definition"), "pytorch-multinode, nvcr.io/nvidia/pytorch:24.12-py3")
	b.Submit(testID("start-run"))
	require.True(t, strings.HasPrefix(b.Path(), "/acceptance-runs/"), "the start button leads to the run's report, not %s", b.Path())
	runPath := b.Path()

	// Watch without reloading: the fragment refreshes itself. Every step is
	// seen passed in order while the run is still running at some point.
	seenRunning := false
	progress := map[int]bool{} // how many steps had passed, as seen while running
	deadline := time.Now().Add(4 * time.Minute)
	for {
		status := b.runStatus()
		if status == "running" {
			seenRunning = true
			passed := 0
			for n := 1; n <= 7; n++ {
				if b.stepStatus(n) == "passed" {
					passed++
				}
			}
			progress[passed] = true
		}
		if status != "" && status != "running" {
			break
		}
		require.True(t, time.Now().Before(deadline), "the run finished within 4 minutes (at: %s)", b.TestIDText("run-status"))
		time.Sleep(500 * time.Millisecond)
	}
	assert.True(t, seenRunning, "the page showed the run in progress")
	assert.GreaterOrEqual(t, len(progress), 3, "steps turned passed one after another on the page: %v", progress)
	assert.Equal(t, runPath, b.Path(), "the page updated in place")

	for n := 1; n <= 7; n++ {
		assert.Equal(t, "passed", b.stepStatus(n), "step %d", n)
	}
	assert.Equal(t, "Pool h100-sxm-ib-training passed all 7 steps of its acceptance test.", b.TestIDText("run-status"))
	assert.Regexp(t, `^Cost of the run: \$\d+\.\d\d$`, b.TestIDText("run-cost"))
	report := b.TestIDText("steps")
	assert.Contains(t, report, "data pull 12.5 s, at most 60 s allowed")
	assert.Contains(t, report, "all-reduce bus bandwidth 183.2 GB/s, at least 150 GB/s allowed")
	assert.Contains(t, report, "checkpoint write 41.2 s, at most 60 s allowed")
	assert.Contains(t, report, "its replacement resumed from step 1200")
	assert.Contains(t, report, "this pool delivers 1.7× the GPU rental baseline per dollar")

	// The pool's history lists the run with its ratio.
	b.Open("/pools/h100-sxm-ib-training/acceptance")
	history := b.TestIDText("history")
	assert.Contains(t, history, "1.7×")
	assert.Contains(t, history, "all-reduce bus bandwidth 183.2 GB/s · throughput 2400 samples/s · checkpoint write 41.2 s · recovery after deleting a pod")
}
