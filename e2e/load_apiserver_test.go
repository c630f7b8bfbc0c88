package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gantry-dev/gantry/internal/devcluster/stacktest"
)

// requireAPIServerProfiles fails the run unless the stack's API server
// serves Go's profiles: a stack started before it did must be taken down.
func requireAPIServerProfiles(b *testing.B, env *stacktest.Env) {
	b.Helper()
	_, err := env.Kube.Discovery().RESTClient().Get().AbsPath("/debug/pprof/").DoRaw(b.Context())
	require.NoError(b, err, "the stack's API server serves no profiles (/debug/pprof/): "+
		"a stack started before --profiling=true is running; take it down (go run ./cmd/gantry-dev down) and run again")
}

// apiServerWindows takes the API server's CPU profile in back-to-back
// windows of profileWindow while a page's load runs, each into
// dir/apiserver-cpu-<name>-<HHMMSS>.pprof, with, for each window, the
// cores it used (see profileWindows).
func apiServerWindows(ctx context.Context, env *stacktest.Env, dir, name string) (stop func() ([]string, error)) {
	fetch := func(ctx context.Context) ([]byte, error) {
		return env.Kube.Discovery().RESTClient().Get().AbsPath("/debug/pprof/profile").
			Param("seconds", strconv.Itoa(int(profileWindow.Seconds()))).DoRaw(ctx)
	}
	// Each window's last reading is the next one's first. Its requests are
	// counted over the whole phase instead (apiServerPhase): the API
	// server's /metrics is megabytes, and reading it every window took a
	// core for a moment in the middle of the views measured.
	cpu0 := processCPUNamed("kube-apiserver")
	describe := func(_ context.Context, window time.Duration) string {
		cpu1 := processCPUNamed("kube-apiserver")
		defer func() { cpu0 = cpu1 }()
		return fmt.Sprintf("cores=%.2f", (cpu1-cpu0).Seconds()/window.Seconds())
	}
	return profileWindows(ctx, filepath.Join(dir, "apiserver-cpu-"+name), fetch, describe)
}

// apiServerPhase is the API server's requests a second and the most
// frequent of them between two readings of its request counters taken
// took apart: before a phase's views (before) and after them (after),
// neither while views are measured.
func apiServerPhase(before, after map[string]float64, took time.Duration) string {
	return fmt.Sprintf("requests_per_s=%.0f top=%q", total(before, after)/took.Seconds(), writeRates(before, after, took, 6))
}

// portalWindows is apiServerWindows for the portal, from its --debug-listen
// address (debugURL), into dir/cpu-<name>-<HHMMSS>.pprof, with the cores
// the portal used in each window: a burst of its own work (a loop's pass,
// a collection) is in the profile of its seconds.
func portalWindows(ctx context.Context, debugURL string, pid int, dir, name string) (stop func() ([]string, error)) {
	fetch := func(ctx context.Context) ([]byte, error) {
		u := fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", debugURL, int(profileWindow.Seconds()))
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return nil, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("GET %s: %s", u, resp.Status)
		}
		return io.ReadAll(resp.Body)
	}
	// A portal that ended counts none (the run fails on it elsewhere).
	cpu := func() time.Duration { t, _ := pidTicks(pid); return t.cpu() }
	cpu0 := cpu()
	describe := func(_ context.Context, window time.Duration) string {
		cpu1 := cpu()
		defer func() { cpu0 = cpu1 }()
		return fmt.Sprintf("cores=%.2f", (cpu1-cpu0).Seconds()/window.Seconds())
	}
	return profileWindows(ctx, filepath.Join(dir, "cpu-"+name), fetch, describe)
}

// profileWindow is how long each CPU profile taken during a page's load
// lasts: short enough to tell a burst of a second or two from a process's
// steady work, long enough for a profile that says something (1,000
// samples at one core busy).
const profileWindow = 10 * time.Second

// profileWindows fetches CPU profiles of profileWindow in back-to-back
// windows until stop, each into <prefix>-<HHMMSS>.pprof (the window's
// start, UTC). stop waits for the window under way and returns one line
// per window: when, what describe says of it, and the profile, to match
// with the STALL lines of the slowest views.
func profileWindows(ctx context.Context, prefix string, fetch func(context.Context) ([]byte, error),
	describe func(ctx context.Context, window time.Duration) string) (stop func() ([]string, error)) {
	ctx, cancel := context.WithCancel(ctx)
	var (
		lines []string
		errs  []error
		wg    sync.WaitGroup
	)
	// The profile's own request outlives the stop: the window under way
	// ends with its seconds, not cut short.
	profileCtx := context.WithoutCancel(ctx)
	wg.Go(func() {
		// At least one window, however soon the load ends.
		for from := time.Now(); ; {
			raw, err := fetch(profileCtx)
			if err != nil {
				errs = append(errs, fmt.Errorf("CPU profile %s: %w", prefix, err))
				return
			}
			to := time.Now()
			what := describe(profileCtx, to.Sub(from))
			file := fmt.Sprintf("%s-%s.pprof", prefix, from.UTC().Format("150405"))
			if err := os.WriteFile(file, raw, 0o644); err != nil {
				errs = append(errs, fmt.Errorf("CPU profile: %w", err))
				return
			}
			lines = append(lines, fmt.Sprintf("from=%s to=%s %s profile=%s",
				from.UTC().Format(tailClock), to.UTC().Format(tailClock), what, filepath.Base(file)))
			if ctx.Err() != nil {
				return
			}
			from = to
		}
	})
	return func() ([]string, error) {
		cancel()
		wg.Wait()
		return lines, errors.Join(errs...)
	}
}

// apiServerHeap keeps the API server's heap profile in file and returns its
// resident memory.
func apiServerHeap(b *testing.B, env *stacktest.Env, file string) int64 {
	b.Helper()
	raw, err := env.Kube.Discovery().RESTClient().Get().AbsPath("/debug/pprof/heap").DoRaw(b.Context())
	require.NoError(b, err, "the API server's heap profile")
	require.NoError(b, os.WriteFile(file, raw, 0o644))
	pids := processesNamed(b, "kube-apiserver")
	require.Len(b, pids, 1, "one API server")
	return procRSS(b, pids[0])
}

// processCPUNamed is the CPU time the process named name (the one of
// them) has used so far; zero when none runs.
func processCPUNamed(name string) time.Duration {
	procs, err := processCPU()
	if err != nil {
		return 0
	}
	for _, p := range procs {
		if p.name == name {
			return p.cpu()
		}
	}
	return 0
}

// total is how many requests were served between two apiserverRequests
// readings.
func total(before, after map[string]float64) float64 {
	var n float64
	for k, v := range after {
		n += v - before[k]
	}
	return n
}
