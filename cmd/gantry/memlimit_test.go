package main

import (
	"errors"
	"os"
	"runtime/debug"
	"testing"

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
