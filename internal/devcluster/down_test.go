package devcluster

import (
	"context"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A stack in a throwaway root: it must never touch the shared .local/.
func scratchStack(t *testing.T) *Stack {
	t.Helper()
	s := &Stack{layout: Layout{Root: t.TempDir()}, out: io.Discard, state: State{Processes: map[string]ProcessState{}}}
	require.NoError(t, s.layout.ensureDirs())
	return s
}

func TestDownStopsEveryRecordedProcess(t *testing.T) {
	s := scratchStack(t)
	var started []ProcessState
	for _, name := range []string{"first", "second"} {
		ps, err := s.run(Process{Name: name, Path: "/bin/sleep", Args: []string{"300"}})
		require.NoError(t, err)
		require.True(t, ps.alive())
		started = append(started, *ps)
	}

	require.NoError(t, s.Down(context.Background()))

	for _, ps := range started {
		assert.False(t, ps.alive(), "pid %d still running", ps.PID)
	}
	st, err := ReadState(s.layout)
	require.NoError(t, err)
	assert.Empty(t, st.Processes)
}

func TestFailedUpStopsOnlyWhatItStarted(t *testing.T) {
	s := scratchStack(t)
	reused, err := s.run(Process{Name: "reused", Path: "/bin/sleep", Args: []string{"300"}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = stopProcess(context.Background(), "reused", *reused, 0) })

	s.started = nil // a new Up begins; "reused" belongs to an earlier one
	mine, err := s.run(Process{Name: "mine", Path: "/bin/sleep", Args: []string{"300"}})
	require.NoError(t, err)
	s.cleanupStarted(context.Background())

	assert.False(t, mine.alive(), "process started by the failed up is stopped")
	assert.True(t, reused.alive(), "process reused by the failed up keeps running")
}
