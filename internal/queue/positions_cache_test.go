package queue

import (
	"context"
	"errors"
	"fmt"
	"net"
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
	items []visibility.PendingWorkload
	err   error
}

func (s *switchablePositions) LocalQueuePending(context.Context, string, string) ([]visibility.PendingWorkload, error) {
	if s.err != nil {
		return nil, fmt.Errorf("pending workloads of team-vision/default: %w", s.err)
	}
	return s.items, nil
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
