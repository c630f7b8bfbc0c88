package queue

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	visibility "sigs.k8s.io/kueue/apis/visibility/v1beta2"

	"github.com/gantry-dev/gantry/internal/kube"
)

// switchablePositions answers the list it holds, or err while err is set.
type switchablePositions struct {
	mu    sync.Mutex
	items []visibility.PendingWorkload
	err   error
}

func (s *switchablePositions) LocalQueuePending(context.Context, string, string) ([]visibility.PendingWorkload, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return nil, fmt.Errorf("pending workloads of team-vision/default: %w", s.err)
	}
	return s.items, nil
}

func (s *switchablePositions) setErr(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err = err
}

// isRefreshing is whether the queue's background call runs.
func (c *CachedPositions) isRefreshing(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.refreshing[key]
}

// apiServerDown is the error of a call while the API
// server does not answer.
func apiServerDown() error {
	return kube.MapError(&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED})
}

func pendingAt(name string, local, cluster int32) visibility.PendingWorkload {
	return visibility.PendingWorkload{ObjectMeta: metav1.ObjectMeta{Name: name}, PositionInLocalQueue: local, PositionInClusterQueue: cluster}
}

// While the visibility API fails, CachedPositions answers the last list it
// read and says when it read it; once it answers again, the fresh list.
func TestCachedPositionsAnswersTheLastListWhileTheVisibilityAPIFails(t *testing.T) {
	read := time.Date(2026, 12, 1, 14, 2, 10, 0, time.UTC)
	clock := read
	src := &switchablePositions{items: []visibility.PendingWorkload{pendingAt("job-a", 0, 0)}}
	c := &CachedPositions{Source: src, TTL: 2 * time.Second, Now: func() time.Time { return clock }}
	ctx := context.Background()

	_, err := c.LocalQueuePending(ctx, "team-vision", "other")
	require.NoError(t, err)
	items, err := c.LocalQueuePending(ctx, "team-vision", "default")
	require.NoError(t, err)
	assert.Equal(t, "job-a", items[0].Name)

	src.err = apiServerDown()
	clock = clock.Add(time.Minute)
	items, err = c.LocalQueuePending(ctx, "team-vision", "default")
	var stale *StalePositionsError
	require.ErrorAs(t, err, &stale)
	assert.Equal(t, read, stale.ReadAt, "the copy says when it was read")
	assert.ErrorIs(t, err, kube.ErrUnreachable, "the visibility API's error keeps its kind")
	assert.Equal(t, []visibility.PendingWorkload{pendingAt("job-a", 0, 0)}, items, "the last list read")

	c2 := &CachedPositions{Source: src, TTL: 2 * time.Second, Now: func() time.Time { return clock }}
	items, err = c2.LocalQueuePending(ctx, "team-vision", "default")
	assert.Nil(t, items, "no copy, no list")
	assert.ErrorIs(t, err, kube.ErrUnreachable)
	assert.False(t, errors.As(err, &stale), "no copy is no stale copy")

	src.err, src.items = nil, []visibility.PendingWorkload{pendingAt("job-b", 0, 0)}
	items, err = c.LocalQueuePending(ctx, "team-vision", "default")
	require.NoError(t, err, "a failure is not kept")
	assert.Equal(t, "job-b", items[0].Name)
}

// The pending sentence says where the job is in line as Kueue last said
// it, and when that was, while Kueue's queue positions do not answer; or
// that its place is unknown and why.
func TestPendingSentenceWhenQueuePositionsDoNotAnswer(t *testing.T) {
	read := time.Date(2026, 12, 1, 14, 2, 10, 0, time.UTC)
	wl := &kueue.Workload{ObjectMeta: metav1.ObjectMeta{Name: "job-train-1", Namespace: "team-vision"},
		Spec: kueue.WorkloadSpec{QueueName: "default"}}
	ahead := []visibility.PendingWorkload{pendingAt("job-first", 0, 0), pendingAt("job-train-1", 1, 3)}
	forbidden := kube.MapError(apierrors.NewForbidden(schema.GroupResource{Group: "visibility.kueue.x-k8s.io", Resource: "localqueues"}, "default", errors.New("no")))
	cases := map[string]struct {
		positions Positions
		want      string
		wantAsOf  time.Time
	}{
		"Kueue answers": {
			positions: &switchablePositions{items: ahead},
			want:      "waiting for Kueue to admit it; 3 jobs ahead",
		},
		"an older copy": {
			positions: stalePositions{items: ahead, err: &StalePositionsError{ReadAt: read, Err: apiServerDown()}},
			want:      "waiting for Kueue to admit it; 3 jobs ahead (as of 14:02:10 UTC; Kueue's queue positions are not answering)",
			wantAsOf:  read,
		},
		"an older copy, next in line": {
			positions: stalePositions{items: []visibility.PendingWorkload{pendingAt("job-train-1", 0, 0)}, err: &StalePositionsError{ReadAt: read, Err: apiServerDown()}},
			want:      "waiting for Kueue to admit it; next in line (as of 14:02:10 UTC; Kueue's queue positions are not answering)",
			wantAsOf:  read,
		},
		"an older copy read before the job queued": {
			positions: stalePositions{items: ahead[:1], err: &StalePositionsError{ReadAt: read, Err: apiServerDown()}},
			want:      "waiting for Kueue to admit it; place in line unknown: Kueue's queue positions are not answering",
		},
		"no copy": {
			positions: &switchablePositions{err: apiServerDown()},
			want:      "waiting for Kueue to admit it; place in line unknown: Kueue's queue positions are not answering",
		},
		"the portal may not read them": {
			positions: &switchablePositions{err: forbidden},
			want:      "waiting for Kueue to admit it; place in line unknown: the portal may not read Kueue's queue positions",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := StatusReader{Positions: tc.positions}.pending(context.Background(), wl)
			assert.Equal(t, tc.want, p.Words)
			assert.Equal(t, tc.wantAsOf, p.PositionsAsOf)
		})
	}
}

// stalePositions answers a list together with an error, as CachedPositions
// does with its last list while the visibility API fails.
type stalePositions struct {
	items []visibility.PendingWorkload
	err   error
}

func (s stalePositions) LocalQueuePending(context.Context, string, string) ([]visibility.PendingWorkload, error) {
	return s.items, s.err
}

// Past its TTL, a queue's copy answers views at once while one call reads
// the next list; the views after that call get the new list. A view never
// waits for the visibility API while a copy younger than twice the TTL is
// there, however slow the API server is.
func TestCachedPositionsAnswersTheCopyWhileOneCallReadsTheNext(t *testing.T) {
	clock := time.Date(2026, 12, 2, 23, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	advance := func(d time.Duration) { mu.Lock(); defer mu.Unlock(); clock = clock.Add(d) }
	src := &countingPositions{}
	c := &CachedPositions{Source: src, TTL: 2 * time.Second, Now: now}
	ctx := context.Background()
	position := func() int32 {
		t.Helper()
		items, err := c.LocalQueuePending(ctx, "team-vision", "default")
		require.NoError(t, err)
		return items[0].PositionInLocalQueue
	}
	require.EqualValues(t, 1, position(), "the first view reads the list")

	src.hold = make(chan struct{})
	advance(3 * time.Second)
	done := make(chan int32)
	go func() {
		var got int32
		for range 5 {
			got = position()
		}
		done <- got
	}()
	select {
	case got := <-done:
		assert.EqualValues(t, 1, got, "views answered from the copy while the API server is slow")
	case <-time.After(10 * time.Second):
		t.Fatal("views waited for the visibility API although a copy 3 s old was there")
	}
	close(src.hold)
	assert.Eventually(t, func() bool { return position() == 2 }, 5*time.Second, 10*time.Millisecond,
		"the views after the background call get its list")
	assert.EqualValues(t, 2, src.calls.Load(), "five views past the TTL made one call")
}

// A background call that fails keeps the copy until it is too old to
// answer; then a view's own call reports the failure with the last list.
func TestCachedPositionsKeepsTheCopyWhenTheBackgroundCallFails(t *testing.T) {
	clock := time.Date(2026, 12, 2, 23, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	advance := func(d time.Duration) { mu.Lock(); defer mu.Unlock(); clock = clock.Add(d) }
	src := &switchablePositions{items: []visibility.PendingWorkload{pendingAt("job-a", 0, 0)}}
	c := &CachedPositions{Source: src, TTL: 2 * time.Second, Now: now}
	ctx := context.Background()
	_, err := c.LocalQueuePending(ctx, "team-vision", "default")
	require.NoError(t, err)
	read := now()

	src.setErr(apiServerDown())
	advance(3 * time.Second)
	items, err := c.LocalQueuePending(ctx, "team-vision", "default")
	require.NoError(t, err, "the copy answers while the background call runs")
	assert.Equal(t, "job-a", items[0].Name)
	assert.Eventually(t, func() bool { return !c.isRefreshing("team-vision/default") }, 5*time.Second, 10*time.Millisecond)

	advance(2 * time.Second)
	items, err = c.LocalQueuePending(ctx, "team-vision", "default")
	var stale *StalePositionsError
	require.ErrorAs(t, err, &stale, "past twice the TTL the view's own call fails")
	assert.Equal(t, read, stale.ReadAt)
	assert.Equal(t, "job-a", items[0].Name)
}
