package views

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAcceptanceStepsRefreshOnlyWhileRunning(t *testing.T) {
	steps := []AcceptanceStep{
		{Number: 1, Title: "Submit a queued training job with the production container", Status: "passed", Figure: "3 s", Threshold: "≤ 600 s", Summary: "Passed: queue wait 3 s, at most 600 s allowed."},
		{Number: 2, Title: "Pull the dataset sample and base model weights", Status: "running"},
	}
	running := render(t, AcceptanceSteps(AcceptanceRunProps{ID: 12, Status: "running", Verdict: "Running: step 2 of 7.", Steps: steps, Running: true}))
	url, ok := running.Find(`#acceptance-steps`).Attr("data-refresh-url")
	assert.True(t, ok, "a running run's steps refresh themselves")
	assert.Equal(t, "/acceptance-runs/12/steps", url)
	assert.Equal(t, "Passed: queue wait 3 s, at most 600 s allowed.", running.Find(`[data-testid="step-1"] [data-testid="step-summary"]`).Text())
	assert.Equal(t, "≤ 600 s", running.Find(`[data-testid="step-1"] [data-testid="step-threshold"]`).Text())
	status, _ := running.Find(`[data-testid="step-2"]`).Attr("data-status")
	assert.Equal(t, "running", status)

	done := render(t, AcceptanceSteps(AcceptanceRunProps{ID: 12, Status: "passed", Verdict: "Pool p passed all 7 steps of its acceptance test.", Steps: steps, Cost: "$0.09"}))
	_, ok = done.Find(`#acceptance-steps`).Attr("data-refresh-url")
	assert.False(t, ok, "a finished run's steps stop refreshing")
	assert.Equal(t, "Cost of the run: $0.09", done.Find(`[data-testid="run-cost"]`).Text())
}

func TestTeamPageLinksLeadsToTheirPoolsAcceptancePages(t *testing.T) {
	doc := render(t, TeamStatusPage(Nav{}, TeamStatusProps{Team: "vision", AcceptancePools: []string{"h100-sxm-ib-training"}}))
	link := doc.Find(`[data-testid="team-acceptance-pools"] a`)
	require.Equal(t, 1, link.Length())
	href, _ := link.Attr("href")
	assert.Equal(t, "/pools/h100-sxm-ib-training/acceptance", href)
	assert.Equal(t, "h100-sxm-ib-training", link.Text())

	doc = render(t, TeamStatusPage(Nav{}, TeamStatusProps{Team: "vision"}))
	assert.Zero(t, doc.Find(`[data-testid="team-acceptance-pools"]`).Length(), "members who cannot start a run see no section")
}
