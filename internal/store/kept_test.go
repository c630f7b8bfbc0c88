package store

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gantry-dev/gantry/internal/servertiming"
)

// A person clicking through pages never waits on the database for a figure
// kept for them: one in the last quarter of its maximum age is answered,
// and read again after the view, so the next views get the newer figure.
func TestAKeptFigureIsReadAgainAfterTheViewThatFindsItOld(t *testing.T) {
	changes := NewChanges("", slog.New(slog.DiscardHandler))
	changes.live, changes.session = true, 1 // as if listening
	kept := NewKept[int64](changes, TopicNotifications)
	kept.maxAge = 2 * time.Second // read again from 1.5 s on
	var reads atomic.Int64
	read := func(ctx context.Context) (int64, error) {
		servertiming.Add(ctx, servertiming.DB, time.Millisecond)
		return reads.Add(1), nil
	}
	view := func() (figure int64, waited bool) {
		ctx, timing := servertiming.Start(context.Background())
		v, err := kept.Get(ctx, "alice", read)
		require.NoError(t, err)
		_, calls := servertiming.Parse(timing.Header())
		return v, calls["db"] > 0
	}

	first, waited := view()
	require.True(t, waited, "the first view reads the figure")
	require.Equal(t, int64(1), first)
	waits, last := 0, first
	for end := time.Now().Add(4 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		v, waited := view()
		if waited {
			waits++
		}
		assert.GreaterOrEqual(t, v, last, "a figure never goes back to an older read")
		last = v
	}
	assert.Zero(t, waits, "views that waited on the database")
	assert.Equal(t, int64(3), reads.Load(), "read at 0 s, then again after the views of about 1.5 and 3 s")
	assert.GreaterOrEqual(t, last, int64(3), "the views after a read again answer its figure")
}
