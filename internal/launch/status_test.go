package launch_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/gantry-dev/gantry/internal/catalog"
	"github.com/gantry-dev/gantry/internal/kube"
	"github.com/gantry-dev/gantry/internal/launch"
	"github.com/gantry-dev/gantry/internal/queue"
)

// cacheStub is a JobReader over fixed objects.
type cacheStub struct {
	job  *batchv1.Job
	sts  *appsv1.StatefulSet
	pods []*corev1.Pod
	wls  []*kueue.Workload
}

func (c cacheStub) JobState(_, _ string) (kube.JobState, error) {
	if c.job == nil {
		return kube.JobState{}, nil
	}
	return kube.StateOf(c.job), nil
}
func (c cacheStub) StatefulSet(_, _ string) (*appsv1.StatefulSet, error)       { return c.sts, nil }
func (c cacheStub) Deployment(_, _ string) (*appsv1.Deployment, error)         { return nil, nil }
func (c cacheStub) Pods(_, _ string) ([]*corev1.Pod, error)                    { return c.pods, nil }
func (c cacheStub) WorkloadsOwnedBy(_, _, _ string) ([]*kueue.Workload, error) { return c.wls, nil }

func pod(phase corev1.PodPhase, gated bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p-0"}, Status: corev1.PodStatus{Phase: phase}}
	if gated {
		p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "kueue.x-k8s.io/admission"}}
	}
	return p
}

func workload(condType, status, msg string) *kueue.Workload {
	return &kueue.Workload{Status: kueue.WorkloadStatus{Conditions: []metav1.Condition{{Type: condType, Status: metav1.ConditionStatus(status), Message: msg}}}}
}

// admitted is a Workload as Kueue leaves it on admission: quota reserved and admitted.
func admitted() *kueue.Workload {
	wl := workload("QuotaReserved", "True", "")
	wl.Status.Conditions = append(wl.Status.Conditions, metav1.Condition{Type: "Admitted", Status: metav1.ConditionTrue})
	return wl
}

func TestStatusPhases(t *testing.T) {
	job := func(conds ...batchv1.JobCondition) *batchv1.Job {
		return &batchv1.Job{Status: batchv1.JobStatus{Conditions: conds}}
	}
	sts := func(replicas int32) *appsv1.StatefulSet {
		return &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{Replicas: new(replicas)}}
	}
	cases := map[string]struct {
		kind        catalog.Kind
		cache       cacheStub
		wantPhase   queue.Phase
		wantMessage string
	}{
		"job waiting for quota shows Kueue's words": {
			kind: catalog.KindTraining, cache: cacheStub{job: job(), wls: []*kueue.Workload{workload("QuotaReserved", "False", "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor h100-sxm-ib-training, 4 more needed")}},
			wantPhase: queue.PhaseQueued, wantMessage: "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor h100-sxm-ib-training, 4 more needed",
		},
		"job admitted":  {kind: catalog.KindTraining, cache: cacheStub{job: job(), wls: []*kueue.Workload{admitted()}}, wantPhase: queue.PhaseAdmitted},
		"job running":   {kind: catalog.KindTraining, cache: cacheStub{job: job(), pods: []*corev1.Pod{pod(corev1.PodRunning, false)}}, wantPhase: queue.PhaseRunning},
		"job succeeded": {kind: catalog.KindTraining, cache: cacheStub{job: job(batchv1.JobCondition{Type: batchv1.JobComplete, Status: corev1.ConditionTrue})}, wantPhase: queue.PhaseSucceeded},
		"job failed": {
			kind: catalog.KindTraining, cache: cacheStub{job: job(batchv1.JobCondition{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Message: "Job has reached the specified backoff limit"})},
			wantPhase: queue.PhaseFailed, wantMessage: "Job has reached the specified backoff limit",
		},
		"notebook pod gated by Kueue": {kind: catalog.KindNotebook, cache: cacheStub{sts: sts(1), pods: []*corev1.Pod{pod(corev1.PodPending, true)}}, wantPhase: queue.PhaseQueued},
		// Admitted and its pod exists but has not started: being created.
		"notebook pod admitted": {kind: catalog.KindNotebook, cache: cacheStub{sts: sts(1), pods: []*corev1.Pod{pod(corev1.PodPending, false)}}, wantPhase: queue.PhaseCreating},
		"notebook stopped":      {kind: catalog.KindNotebook, cache: cacheStub{sts: sts(0)}, wantPhase: queue.PhaseStopped},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			st, err := launch.StatusOf(tc.cache, "team-vision", "x", tc.kind)
			require.NoError(t, err)
			assert.Equal(t, tc.wantPhase, st.Phase)
			if tc.wantMessage != "" {
				assert.Equal(t, tc.wantMessage, st.Message)
			}
		})
	}
}
