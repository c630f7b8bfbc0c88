package queue

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/gantry/internal/cost"
	"github.com/gantry-dev/gantry/internal/kube"
)

// endedJobs is a job cache holding one job's pods.
type endedJobs struct{ pods []*corev1.Pod }

func (e endedJobs) Job(string, string) (*batchv1.Job, error)   { return nil, kube.ErrNotFound }
func (e endedJobs) Pods(string, string) ([]*corev1.Pod, error) { return e.pods, nil }

func TestLedgerCauseIsTheCauseThePageShows(t *testing.T) {
	oom := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "train-0"}, Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
		Name: "main", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}}}}}}
	crash := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "train-0"}, Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
		Name: "main", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2, Reason: "Error"}}}}}}
	cases := map[string]struct {
		run  cost.Run
		pods []*corev1.Pod
		want CauseKind
	}{
		"out of memory":      {cost.Run{JobKind: "Job", Outcome: cost.OutcomeFailed}, []*corev1.Pod{oom}, CauseOutOfMemory},
		"exit code":          {cost.Run{JobKind: "Job", Outcome: cost.OutcomeFailed}, []*corev1.Pod{crash}, CauseExitCode},
		"preempted":          {cost.Run{Outcome: cost.OutcomeEvicted, Reason: "Preempted: preempted to accommodate a workload"}, nil, CausePreempted},
		"pods not ready":     {cost.Run{Outcome: cost.OutcomeEvicted, Reason: "PodsReadyTimeout: exceeded"}, nil, CausePodsNotReady},
		"another eviction":   {cost.Run{Outcome: cost.OutcomeEvicted, Reason: "Deactivated: by someone"}, nil, CauseEvicted},
		"a success has none": {cost.Run{Outcome: cost.OutcomeSucceeded}, []*corev1.Pod{crash}, ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, string(tc.want), LedgerCauses{Jobs: endedJobs{tc.pods}}.RunCause(context.Background(), tc.run))
		})
	}
}
