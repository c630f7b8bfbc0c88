package devcluster

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Two test binaries on one stack take turns: the second waits for the
// first's test lock and gets it once the first lets go, while the stack's
// own up/down lock stays free for the binary that holds the test lock.
func TestTestBinariesTakeTurnsOnOneStack(t *testing.T) {
	l := Layout{Root: t.TempDir()}
	t.Setenv("GANTRY_LOCAL_DIR", "")

	releaseFirst, err := LockForTests(context.Background(), l)
	require.NoError(t, err)

	unlockUp, err := lock(context.Background(), l)
	require.NoError(t, err, "the binary holding the test lock must still be able to bring the stack up")
	unlockUp()

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	_, err = LockForTests(ctx, l)
	cancel()
	require.Error(t, err, "a second binary got the stack while the first held it")
	assert.ErrorIs(t, err, context.DeadlineExceeded)

	got := make(chan error, 1)
	go func() {
		release, err := LockForTests(context.Background(), l)
		if err == nil {
			release()
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("the second binary did not wait for the first (err %v)", err)
	case <-time.After(300 * time.Millisecond):
	}
	releaseFirst()
	select {
	case err := <-got:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the second binary still waits after the first let go of the stack")
	}
}
