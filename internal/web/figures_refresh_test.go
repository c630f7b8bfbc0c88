package web

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gantry-dev/gantry/internal/servertiming"
)

// TestRecentFiguresAreReadAgainBeforeTheyAreTooOld: a run's figures of now
// that a view asked for are read again in the background while other runs
// are viewed, each time over the range moved on to the present, so the
// run's next view finds figures about as young as the refresh age (not as
// old as its last view, which past maxFamilyAge it would wait for); once
// nobody asked for the window, the reads stop; a run with no figures to
// answer (its reads failed) is left to its next view.
func TestRecentFiguresAreReadAgainBeforeTheyAreTooOld(t *testing.T) {
	rt := refreshTimes{after: 200 * time.Millisecond, window: 1200 * time.Millisecond, every: 20 * time.Millisecond}
	s := sharedFigures[time.Time]{refresh: rt}
	const ttl = 50 * time.Millisecond
	var mu sync.Mutex
	loads := map[string]int{}
	load := func(family string) func(context.Context, time.Time) (time.Time, error) {
		return func(_ context.Context, end time.Time) (time.Time, error) {
			mu.Lock()
			defer mu.Unlock()
			loads[family]++
			if family == "failing" {
				return time.Time{}, fmt.Errorf("prometheus not answering")
			}
			return end, nil
		}
	}
	loadsOf := func(family string) int {
		mu.Lock()
		defer mu.Unlock()
		return loads[family]
	}
	ctx := t.Context()
	view := func(family string) (time.Time, error) {
		return s.getRecent(ctx, family, family+"|now", ttl, time.Now(), load(family))
	}
	// Other runs' views, every few milliseconds, until stop.
	var stop atomic.Bool
	others := make(chan struct{})
	go func() {
		defer close(others)
		for !stop.Load() {
			_, _ = view("other")
			time.Sleep(5 * time.Millisecond)
		}
	}()
	t.Cleanup(func() { stop.Store(true); <-others })

	asked := time.Now()
	end, err := view("train-1")
	require.NoError(t, err)
	require.False(t, end.Before(asked), "the first view waits for its figures")
	_, err = view("failing")
	require.Error(t, err)

	time.Sleep(3 * rt.after)
	require.GreaterOrEqual(t, loadsOf("train-1"), 2, "read again with no view of its own")
	end, err = view("train-1")
	require.NoError(t, err)
	assert.Less(t, time.Since(end), rt.after+100*time.Millisecond,
		"the range read again ends near the present, not where the first view's did")
	assert.Equal(t, 1, loadsOf("failing"), "a run with no figures to answer is left to its next view")

	// Past the window since train-1's last view, its reads stop.
	time.Sleep(rt.window + rt.after)
	quiet := loadsOf("train-1")
	time.Sleep(3 * rt.after)
	assert.Equal(t, quiet, loadsOf("train-1"), "nobody asked for the window: nothing read")
	s.mu.Lock()
	_, still := s.asked["train-1"]
	s.mu.Unlock()
	assert.False(t, still, "the run asked for no more is forgotten")
	assert.Positive(t, loadsOf("other"))
}

// TestAViewsTimingHoldsOnlyTheReadsItWaitedFor: the Prometheus reads a
// view starts without waiting for them (its own figures' reload while it
// shows the last ones, and other runs' background reads) are not in its
// Server-Timing; the read it waits for is.
func TestAViewsTimingHoldsOnlyTheReadsItWaitedFor(t *testing.T) {
	s := sharedFigures[int]{refresh: refreshTimes{after: time.Millisecond, every: time.Millisecond}}
	const ttl = time.Millisecond
	done := make(chan string, 8)
	load := func(family string) func(context.Context, time.Time) (int, error) {
		return func(ctx context.Context, _ time.Time) (int, error) {
			servertiming.Add(ctx, servertiming.Prometheus, 10*time.Millisecond)
			done <- family
			return 1, nil
		}
	}
	prom := func(tm *servertiming.Timing) float64 {
		ms, _ := servertiming.Parse(tm.Header())
		return ms["prom"]
	}

	ctx, tm := servertiming.Start(t.Context())
	_, err := s.getRecent(ctx, "train-1", "train-1|now", ttl, time.Now(), load("train-1"))
	require.NoError(t, err)
	<-done
	assert.InDelta(t, 10, prom(tm), 0.01, "the read the first view waited for is its own")

	time.Sleep(5 * time.Millisecond)
	ctx, tm = servertiming.Start(t.Context())
	_, err = s.getRecent(ctx, "train-2", "train-2|now", ttl, time.Now(), load("train-2"))
	require.NoError(t, err)
	read := []string{<-done, <-done}
	require.ElementsMatch(t, []string{"train-1", "train-2"}, read, "train-1 read again in the background by train-2's view")
	assert.InDelta(t, 10, prom(tm), 0.01, "train-1's background read is not in train-2's view")

	ctx, _ = servertiming.Start(t.Context())
	_, err = s.getOrLast(ctx, "team", "team|v2", ttl, func(ctx context.Context) (int, error) { return load("team")(ctx, time.Time{}) })
	require.NoError(t, err)
	<-done
	ctx, tm = servertiming.Start(t.Context())
	_, err = s.getOrLast(ctx, "team", "team|v3", ttl, func(ctx context.Context) (int, error) { return load("team")(ctx, time.Time{}) })
	require.NoError(t, err)
	<-done
	assert.Zero(t, prom(tm), "the view shown the last figures did not wait for the new ones' read")
}
