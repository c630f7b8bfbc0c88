package queue

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"

	"github.com/gantry-dev/gantry/internal/store"
)

func moment(kind string, at time.Time, ending Ending, pod string) store.JobMoment {
	return store.JobMoment{Namespace: "team-a", Job: "train", Kind: kind, At: at, Ending: string(ending), Pod: pod, Words: string(ending) + " " + pod}
}

func TestAttempts(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	cases := map[string]struct {
		moments []store.JobMoment
		want    []Attempt
	}{
		"second pod of a multi-node job fails first, the retry runs 12s later": {
			moments: []store.JobMoment{
				moment(store.MomentStarted, at(0), "", "train-0"),
				moment(store.MomentStarted, at(1), "", "train-1"),
				moment(store.MomentEnded, at(30), EndingPodFailed, "train-1"),
				moment(store.MomentEnded, at(31), EndingPodFailed, "train-0"),
				moment(store.MomentStarted, at(42), "", "train-1-b"),
				moment(store.MomentEnded, at(90), EndingSucceeded, ""),
			},
			want: []Attempt{
				{Number: 1, Start: at(0), End: at(30), Ending: EndingPodFailed, Words: "pod-failed train-1", Pod: "train-1", AlsoFailed: []string{"train-0"}},
				{Number: 2, Start: at(42), End: at(90), Ending: EndingSucceeded, Words: "succeeded ", Recovery: 12 * time.Second},
			},
		},
		"preempted, requeued and running again": {
			moments: []store.JobMoment{
				moment(store.MomentStarted, at(0), "", "p-0"),
				moment(store.MomentEnded, at(10), EndingPreempted, ""),
				moment(store.MomentStarted, at(70), "", "p-1"),
			},
			want: []Attempt{
				{Number: 1, Start: at(0), End: at(10), Ending: EndingPreempted, Words: "preempted "},
				{Number: 2, Start: at(70), Recovery: time.Minute},
			},
		},
		"a pod failure the job gives up on ends the attempt as failed, in the pod's words": {
			moments: []store.JobMoment{
				moment(store.MomentStarted, at(0), "", "c-0"),
				moment(store.MomentEnded, at(5), EndingPodFailed, "c-0"),
				moment(store.MomentEnded, at(6), EndingFailed, "c-0"),
			},
			want: []Attempt{{Number: 1, Start: at(0), End: at(5), Ending: EndingFailed, Words: "pod-failed c-0", Pod: "c-0"}},
		},
		"preempted before any pod ran": {
			moments: []store.JobMoment{moment(store.MomentEnded, at(3), EndingPreempted, "")},
			want:    []Attempt{{Number: 1, End: at(3), Ending: EndingPreempted, Words: "preempted "}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Attempts(tc.moments)); diff != "" {
				t.Errorf("attempts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTeamRecovery(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	var ms []store.JobMoment
	for i, rec := range []int{10, 20, 30, 40, 100} {
		job := string(rune('a' + i))
		ms = append(ms,
			store.JobMoment{Namespace: "team-a", Job: job, Kind: store.MomentStarted, At: t0},
			store.JobMoment{Namespace: "team-a", Job: job, Kind: store.MomentEnded, At: t0.Add(time.Minute), Ending: string(EndingPodFailed)},
			store.JobMoment{Namespace: "team-a", Job: job, Kind: store.MomentStarted, At: t0.Add(time.Minute + time.Duration(rec)*time.Second)})
	}
	got := TeamRecovery(ms, t0)
	assert.Equal(t, Recovery{Count: 5, Median: 30 * time.Second, P90: 76 * time.Second}, got)
	assert.Equal(t, Recovery{}, TeamRecovery(ms, t0.Add(time.Hour)), "recoveries before the window are not counted")
}
