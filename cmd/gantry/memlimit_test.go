package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const mib = 1 << 20

func TestMemoryLimitLeavesTheExecutablesPagesOut(t *testing.T) {
	exe := func(n uint64) func() (uint64, error) { return func() (uint64, error) { return n, nil } }

	got, err := lessExecutable(memlimit.Limit(200*mib), exe(75*mib))()
	require.NoError(t, err)
	assert.Equal(t, uint64(125*mib), got, "a 200 MiB container with a 75 MB binary")

	got, err = lessExecutable(memlimit.Limit(100*mib), exe(75*mib))()
	require.NoError(t, err)
	assert.Equal(t, uint64(50*mib), got, "at most half the limit is set aside")

	_, err = lessExecutable(func() (uint64, error) { return 0, memlimit.ErrNoLimit }, exe(75*mib))()
	assert.ErrorIs(t, err, memlimit.ErrNoLimit, "no limit stays no limit")

	broken := errors.New("no /proc/self/exe")
	_, err = lessExecutable(memlimit.Limit(200*mib), func() (uint64, error) { return 0, broken })()
	assert.ErrorIs(t, err, broken)
}

// TestExecutableMappedIsTheLoadableSegments: the test binary's loadable
// segments are some megabytes, less than the file (which also holds
// symbols and debug data).
func TestExecutableMappedIsTheLoadableSegments(t *testing.T) {
	n, err := executableMapped()
	require.NoError(t, err)
	assert.Greater(t, n, uint64(mib))
	path, err := os.Executable()
	require.NoError(t, err)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Less(t, n, uint64(fi.Size()))
}

// TestCollectorPacedUnlessGOGCIsSet: without GOGC the portal collects when
// the heap has grown by half of what was live; an operator's GOGC (which
// the runtime has applied) stays.
func TestCollectorPacedUnlessGOGCIsSet(t *testing.T) {
	was := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(was) })
	unset := func(string) (string, bool) { return "", false }
	set := func(k string) (string, bool) { return "200", k == "GOGC" }

	assert.False(t, paceCollector(set))
	assert.Equal(t, 100, debug.SetGCPercent(100), "an operator's GOGC is left as the runtime applied it")

	assert.True(t, paceCollector(unset))
	assert.Equal(t, defaultGCPercent, debug.SetGCPercent(100))
}

// A small portal's collector waits for 32 MiB of growth, not half of a
// 14 MiB heap; a large one keeps the default pace, and an empty heap (at
// start) is read as 1 MiB, so its first goal is 33 MiB, not unbounded.
func TestPacedPercentGivesTheHeapRoomToGrow(t *testing.T) {
	assert.Equal(t, 229, pacedPercent(14<<20), "1,000 workloads: a collection after 32 MiB of growth")
	assert.Equal(t, defaultGCPercent, pacedPercent(69<<20), "10,000 workloads: half of live is more than 32 MiB")
	assert.Equal(t, defaultGCPercent, pacedPercent(64<<20))
	assert.Equal(t, 3200, pacedPercent(0), "an empty heap counts as 1 MiB")
}

// The pacer sets the pace after a collection from what it left live, and
// stops with its context.
func TestPaceFollowsTheLiveHeap(t *testing.T) {
	was := debug.SetGCPercent(defaultGCPercent)
	t.Cleanup(func() { debug.SetGCPercent(was) })
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { pace(ctx, slog.New(slog.DiscardHandler)); close(done) }()

	gogc := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	assert.EventuallyWithT(t, func(c *assert.CollectT) {
		runtime.GC()
		metrics.Read(live)
		metrics.Read(gogc)
		// What is live moves a little with each collection the test asks for.
		assert.InEpsilon(c, pacedPercent(live[0].Value.Uint64()), gogc[0].Value.Uint64(), 0.1)
	}, 10*time.Second, 200*time.Millisecond)
	metrics.Read(gogc)
	assert.Greater(t, gogc[0].Value.Uint64(), uint64(defaultGCPercent), "a test binary's heap is small")
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the pacer did not stop with its context")
	}
}
