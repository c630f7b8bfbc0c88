package queue

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	visibility "sigs.k8s.io/kueue/apis/visibility/v1beta2"

	"github.com/gantry-dev/gantry/internal/kube"
)

// fakeEvents serves events by "namespace/kind/name".
type fakeEvents map[string][]*kube.Event

func (f fakeEvents) EventsAbout(namespace, kind, name string) ([]*kube.Event, error) {
	if f == nil {
		return nil, kube.ErrNotSynced
	}
	return f[namespace+"/"+kind+"/"+name], nil
}

func event(reason, message string, count int32, at time.Time) *kube.Event {
	return &kube.Event{Reason: reason, Message: message, Count: count, Type: corev1.EventTypeWarning, LastSeen: at}
}

func TestJobStatusListsRecentEventsOfTheJobItsWorkloadAndPods(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	wl := &kueue.Workload{ObjectMeta: metav1.ObjectMeta{Name: "job-train-1a2b3", Namespace: "team-vision",
		CreationTimestamp: metav1.NewTime(t0),
		OwnerReferences:   []metav1.OwnerReference{{Kind: "Job", Name: "train"}}}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "train-0-xyz", Namespace: "team-vision"}}
	many := fakeEvents{}
	for i := range 12 {
		many["team-vision/Pod/train-0-xyz"] = append(many["team-vision/Pod/train-0-xyz"],
			event("FailedScheduling", fmt.Sprint(i), 1, t0.Add(time.Duration(i)*time.Second)))
	}
	cases := map[string]struct {
		events fakeEvents
		in     StatusInput
		want   []JobEvent
	}{
		"events of job, workload and pod, newest first": {
			events: fakeEvents{
				"team-vision/Job/train":                {event("CreatedWorkload", "Created Workload: team-vision/job-train-1a2b3", 0, t0)},
				"team-vision/Workload/job-train-1a2b3": {event("Pending", "couldn't assign flavors", 3, t0.Add(2*time.Minute))},
				"team-vision/Pod/train-0-xyz":          {event("FailedScheduling", "0/4 nodes are available", 2, t0.Add(time.Minute))},
			},
			in: StatusInput{Workloads: []*kueue.Workload{wl}, Pods: []*corev1.Pod{pod}},
			want: []JobEvent{
				{Object: "Workload job-train-1a2b3", Type: "Warning", Reason: "Pending", Message: "couldn't assign flavors", Count: 3, LastSeen: t0.Add(2 * time.Minute)},
				{Object: "Pod train-0-xyz", Type: "Warning", Reason: "FailedScheduling", Message: "0/4 nodes are available", Count: 2, LastSeen: t0.Add(time.Minute)},
				{Object: "Job train", Type: "Warning", Reason: "CreatedWorkload", Message: "Created Workload: team-vision/job-train-1a2b3", Count: 1, LastSeen: t0},
			},
		},
		"no more than the most recent ten": {
			events: many,
			in:     StatusInput{Pods: []*corev1.Pod{pod}},
			want: func() []JobEvent {
				var out []JobEvent
				for i := 11; i >= 2; i-- {
					out = append(out, JobEvent{Object: "Pod train-0-xyz", Type: "Warning", Reason: "FailedScheduling", Message: fmt.Sprint(i),
						Count: 1, LastSeen: t0.Add(time.Duration(i) * time.Second)})
				}
				return out
			}(),
		},
		"cache not synced: no events, status still read": {
			events: nil,
			in:     StatusInput{Workloads: []*kueue.Workload{wl}, Pods: []*corev1.Pod{pod}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := StatusReader{Events: tc.events}
			got := r.JobStatus(context.Background(), tc.in)
			if diff := cmp.Diff(tc.want, got.Events); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// countingPositions counts visibility API calls; a call waits while hold
// is set, until hold is closed.
type countingPositions struct {
	calls atomic.Int32
	err   error
	hold  chan struct{}
}

func (c *countingPositions) LocalQueuePending(ctx context.Context, _, _ string) ([]visibility.PendingWorkload, error) {
	n := c.calls.Add(1)
	if c.hold != nil {
		select {
		case <-c.hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return []visibility.PendingWorkload{{PositionInLocalQueue: n}}, c.err
}

func TestCachedPositionsAsksTheVisibilityAPIOncePerQueuePerTTL(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	cases := map[string]struct {
		err       error
		steps     []time.Duration // clock advance before each call
		queues    []string
		wantCalls int
	}{
		"within the TTL one call":        {steps: []time.Duration{0, time.Second, 500 * time.Millisecond}, queues: []string{"default", "default", "default"}, wantCalls: 1},
		"after twice the TTL asks again": {steps: []time.Duration{0, 4 * time.Second, 0}, queues: []string{"default", "default", "default"}, wantCalls: 2},
		"each queue has its own answer":  {steps: []time.Duration{0, 0}, queues: []string{"default", "other"}, wantCalls: 2},
		"errors are not kept":            {err: errors.New("visibility API down"), steps: []time.Duration{0, 0}, queues: []string{"default", "default"}, wantCalls: 2},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			src := &countingPositions{err: tc.err}
			clock := now
			c := &CachedPositions{Source: src, TTL: 2 * time.Second, Now: func() time.Time { return clock }}
			for i, step := range tc.steps {
				clock = clock.Add(step)
				_, err := c.LocalQueuePending(context.Background(), "team-vision", tc.queues[i])
				if !errors.Is(err, tc.err) {
					t.Fatalf("call %d: err %v, want %v", i, err, tc.err)
				}
			}
			if n := int(src.calls.Load()); n != tc.wantCalls {
				t.Errorf("visibility API calls: got %d, want %d", n, tc.wantCalls)
			}
		})
	}
}
