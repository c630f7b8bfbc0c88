package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gantry-dev/gantry/internal/devcluster/stacktest"
)

// apiServerWindow is how long each of the API server's CPU profiles
// during a page's load lasts: short enough to tell a burst of a second or
// two from the API server's steady work, long enough for a profile that
// says something (1,000 samples at one core busy).
const apiServerWindow = 10 * time.Second

// requireAPIServerProfiles fails the run unless the stack's API server
// serves Go's profiles: a stack started before it did must be taken down.
func requireAPIServerProfiles(b *testing.B, env *stacktest.Env) {
	b.Helper()
	_, err := env.Kube.Discovery().RESTClient().Get().AbsPath("/debug/pprof/").DoRaw(b.Context())
	require.NoError(b, err, "the stack's API server serves no profiles (/debug/pprof/): "+
		"a stack started before --profiling=true is running; take it down (go run ./cmd/gantry-dev down) and run again")
}

// apiServerWindows takes the API server's CPU profile in back-to-back
// windows of apiServerWindow while a page's load runs, each into
// dir/apiserver-cpu-<name>-<HHMMSS>.pprof (the window's start, UTC), and
// reads, for each window, the API server's CPU time and the requests it
// served. stop waits for the window under way and returns one line per
// window: when, how many cores, which requests most, and the profile, to
// match with the STALL lines of the slowest views.
func apiServerWindows(ctx context.Context, env *stacktest.Env, dir, name string) (stop func() ([]string, error)) {
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
		// Each window's last readings are the next one's first.
		from, cpu0, reqs0 := time.Now(), apiServerCPU(), apiserverRequests(profileCtx, env, true)
		for ctx.Err() == nil {
			raw, err := env.Kube.Discovery().RESTClient().Get().AbsPath("/debug/pprof/profile").
				Param("seconds", strconv.Itoa(int(apiServerWindow.Seconds()))).DoRaw(profileCtx)
			if err != nil {
				errs = append(errs, fmt.Errorf("API server CPU profile: %w", err))
				return
			}
			to, cpu1, reqs1 := time.Now(), apiServerCPU(), apiserverRequests(profileCtx, env, true)
			cores := (cpu1 - cpu0).Seconds() / to.Sub(from).Seconds()
			file := filepath.Join(dir, fmt.Sprintf("apiserver-cpu-%s-%s.pprof", name, from.UTC().Format("150405")))
			if err := os.WriteFile(file, raw, 0o644); err != nil {
				errs = append(errs, fmt.Errorf("API server CPU profile: %w", err))
				return
			}
			lines = append(lines, fmt.Sprintf("from=%s to=%s cores=%.2f requests_per_s=%.0f top=%q profile=%s",
				from.UTC().Format(tailClock), to.UTC().Format(tailClock), cores, total(reqs0, reqs1)/to.Sub(from).Seconds(),
				writeRates(reqs0, reqs1, to.Sub(from), 6), filepath.Base(file)))
			from, cpu0, reqs0 = to, cpu1, reqs1
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

// apiServerCPU is the CPU time the stack's API server has used so far;
// zero when it is not running.
func apiServerCPU() time.Duration {
	procs, err := processCPU()
	if err != nil {
		return 0
	}
	for _, p := range procs {
		if p.name == "kube-apiserver" {
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
