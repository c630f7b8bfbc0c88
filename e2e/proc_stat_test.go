package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseStatReadsACommandWithSpacesAndItsCPUTime(t *testing.T) {
	got, err := parseStat("4242 (kube apiserver) S 1 4242 4242 0 -1 4194560 100 0 7 0 1234 567 0 0 20 0 12 0 100 0 0\n")
	require.NoError(t, err)
	assert.Equal(t, procTicks{name: "kube apiserver", ticks: 1234 + 567, majorFaults: 7}, got)
	assert.Equal(t, 18010*time.Millisecond, got.cpu())

	_, err = parseStat("4242 (short) S 1 2")
	assert.Error(t, err, "a line without the CPU fields")

	procs, err := processCPU()
	require.NoError(t, err)
	assert.Equal(t, "e2e.test", procs[os.Getpid()].name, "this test's own process")
}

// A STALL line names, for a slow view, what ran in the samples around it:
// the window, the share of it in which a thread waited for a core and for
// the disk, the busiest processes and those that read pages from disk.
func TestStallsNameWhatRanAroundTheSlowestViews(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 18, 41, 25, 0, time.UTC)
	sample := func(after time.Duration, apiserver, postgres, postgresFaults int64, waited, ioWaited, postgresDelay time.Duration) cpuSample {
		return cpuSample{at: t0.Add(after), waited: waited, ioWaited: ioWaited,
			procs: map[int]procTicks{10: {name: "kube-apiserver", ticks: apiserver, majorFaults: 3},
				20: {name: "postgres", ticks: postgres, majorFaults: postgresFaults, runDelay: postgresDelay},
				21: {name: "postgres", ticks: 5, runDelay: postgresDelay / 2},
				30: {name: "gantry", ticks: 7, runDelay: 2 * time.Millisecond}}}
	}
	samples := []cpuSample{
		sample(0, 100, 50, 10, time.Second, 0, 0),
		sample(500*time.Millisecond, 180, 51, 14, 1400*time.Millisecond, 100*time.Millisecond, 80*time.Millisecond),
		sample(time.Second, 230, 53, 14, 1700*time.Millisecond, 100*time.Millisecond, 80*time.Millisecond),
	}
	lat := []time.Duration{300 * time.Millisecond, 2 * time.Millisecond}
	timings := []viewTiming{{at: t0.Add(100 * time.Millisecond)}, {at: t0.Add(600 * time.Millisecond)}}

	got := stalls(samples, lat, timings, 1)
	require.Len(t, got, 1, "the slowest view only")
	assert.Equal(t, `at=18:41:25.100 ms=300 window_ms=500 cpu_wait_pct=80 io_wait_pct=20 busiest="kube-apiserver[10] 160%, postgres[20] 2%" `+
		`run_delay_ms="postgres 120" major_faults="postgres[20] 4"`, got[0], "both PostgreSQL backends' waits for a core together")
	both := stalls(samples, lat, timings, 5)
	require.Len(t, both, 2)
	assert.Contains(t, both[1], `io_wait_pct=0 busiest="kube-apiserver[10] 100%, postgres[20] 4%" run_delay_ms="" major_faults=""`,
		"no page read from disk and no wait for a core in the second window")
	assert.Empty(t, stalls(samples[:1], lat, timings, 5), "no sample after the view: nothing to say")
}

// A view's time in the portal alone comes from its Server-Timing trailer.
func TestViewTimesComeFromTheTrailers(t *testing.T) {
	got := viewTimes([]viewTiming{{trailer: "view;dur=12.50"}, {header: "total;dur=3.00"}})
	assert.Equal(t, []time.Duration{12500 * time.Microsecond, 0}, got, "a view without a trailer counts none")
}

// Profiles taken during a page's load follow one another until the load
// ends, the one under way finished, each in a file of its own with a line
// that says when and what.
func TestProfileWindowsFollowOneAnotherUntilStopped(t *testing.T) {
	dir := t.TempDir()
	var n atomic.Int32
	second := make(chan struct{})
	fetch := func(context.Context) ([]byte, error) {
		if n.Add(1) == 2 {
			close(second)
		}
		time.Sleep(1100 * time.Millisecond) // a file name per second
		return []byte(fmt.Sprintf("profile %d", n.Load())), nil
	}
	stop := profileWindows(t.Context(), filepath.Join(dir, "cpu-jobs"), fetch,
		func(_ context.Context, window time.Duration) string {
			return fmt.Sprintf("long=%t", window >= time.Second)
		})
	<-second
	lines, err := stop()
	require.NoError(t, err)
	require.Len(t, lines, 2, "the window under way when stopped is finished: %q", lines)
	for _, l := range lines {
		assert.Regexp(t, `^from=\d\d:\d\d:\d\d\.\d{3} to=\d\d:\d\d:\d\d\.\d{3} long=true profile=cpu-jobs-\d{6}\.pprof$`, l)
	}
	files, err := filepath.Glob(filepath.Join(dir, "cpu-jobs-*.pprof"))
	require.NoError(t, err)
	assert.Len(t, files, 2)

	failing := profileWindows(t.Context(), filepath.Join(dir, "cpu-team"), func(context.Context) ([]byte, error) {
		return nil, errors.New("404 Not Found")
	}, func(context.Context, time.Duration) string { return "" })
	_, err = failing()
	assert.ErrorContains(t, err, "404 Not Found", "a profile that cannot be taken fails the run")
}
