package kube

import (
	"reflect"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

func fatPodSpec() corev1.PodSpec {
	return corev1.PodSpec{NodeName: "gpu-0", NodeSelector: map[string]string{"gantry.dev/pool": "h100"},
		SchedulingGates: []corev1.PodSchedulingGate{{Name: "kueue.x-k8s.io/admission"}},
		Volumes:         []corev1.Volume{{Name: "data"}}, Tolerations: []corev1.Toleration{{Key: "nvidia.com/gpu"}},
		Containers: []corev1.Container{{Name: "main", Image: "nvcr.io/nvidia/pytorch:24.01", Command: []string{"torchrun"},
			Env: []corev1.EnvVar{{Name: "NCCL_DEBUG", Value: "INFO"}}, VolumeMounts: []corev1.VolumeMount{{Name: "data"}},
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"memory": resource.MustParse("16Gi"), "nvidia.com/gpu": resource.MustParse("8")}}}}}
}

func TestTrimKeepsWhatPagesReadOfPodSpecs(t *testing.T) {
	pod := &corev1.Pod{Spec: fatPodSpec()}
	spec := fatPodSpec()
	spec.Containers[0].Resources.Requests = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}
	wl := &kueue.Workload{Spec: kueue.WorkloadSpec{PodSets: []kueue.PodSet{{Name: "main", Template: corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"gantry.dev/parameters": `{"a":1}`}}, Spec: spec}}}}}
	job := &batchv1.Job{Spec: batchv1.JobSpec{Parallelism: new(int32(2)), Template: corev1.PodTemplateSpec{Spec: fatPodSpec()}}}
	cq := &kueue.ClusterQueue{ObjectMeta: bloat(metav1.ObjectMeta{Name: "team-vision"})}
	for _, o := range []any{pod, wl, job, cq} {
		_, err := trimObject(o)
		assert.NoError(t, err)
	}

	s := pod.Spec
	assert.Equal(t, "gpu-0", s.NodeName)
	assert.Equal(t, "h100", s.NodeSelector["gantry.dev/pool"], "the pool stays")
	assert.Len(t, s.SchedulingGates, 1, "the admission gate stays")
	c := s.Containers[0]
	assert.Equal(t, "16Gi", c.Resources.Limits.Memory().String(), "the memory limit the OOM cause names stays")
	assert.Equal(t, "nvcr.io/nvidia/pytorch:24.01", c.Image)
	assert.Empty(t, c.Env)
	assert.Empty(t, c.Command)
	assert.Empty(t, s.Volumes)
	assert.Empty(t, s.Tolerations)

	ps := wl.Spec.PodSets[0].Template
	assert.Equal(t, "h100", ps.Spec.NodeSelector["gantry.dev/pool"], "the pool the queue explains stays")
	assert.Equal(t, "8", ps.Spec.Containers[0].Resources.Requests.Name("nvidia.com/gpu", resource.DecimalSI).String(), "the requests stay")
	assert.Empty(t, ps.Annotations)
	assert.Empty(t, ps.Spec.Volumes)
	assert.Empty(t, ps.Spec.Containers[0].Env)

	assert.Equal(t, int32(2), *job.Spec.Parallelism, "the job's own fields stay")
	assert.Empty(t, job.Spec.Template.Spec.Containers, "its pod template goes: pods and workloads say the rest")
	assert.Empty(t, cq.ManagedFields, "Kueue's objects lose their managed fields too")
}

// The job cache keeps the labels and annotations pages read, and of a
// Workload's status the conditions and admission; the nodes' and queues'
// caches keep every label (pools and teams are read from them).
func TestJobCacheKeepsTheLabelsAndStatusPagesRead(t *testing.T) {
	labels := func() map[string]string {
		return map[string]string{"gantry.dev/team": "vision", "gantry.dev/owner": "alice", "gantry.dev/template": "pytorch",
			"gantry.dev/template-version": "3", "gantry.dev/pool": "h100", "app.kubernetes.io/instance": "train-1",
			"batch.kubernetes.io/job-completion-index": "2", "gantry.dev/cost-center": "cc-1", "app.kubernetes.io/part-of": "gantry",
			"kueue.x-k8s.io/queue-name": "team", "batch.kubernetes.io/controller-uid": "u-1"}
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: labels(), Finalizers: []string{"batch.kubernetes.io/job-tracking"},
		Annotations: map[string]string{"batch.kubernetes.io/job-completion-index": "2", "gantry.dev/simulate-duration": "1h"}}}
	_, err := newSharedMaps().trimJobCacheObject(pod)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"gantry.dev/team": "vision", "gantry.dev/owner": "alice", "gantry.dev/template": "pytorch",
		"gantry.dev/template-version": "3", "gantry.dev/pool": "h100", "app.kubernetes.io/instance": "train-1",
		"batch.kubernetes.io/job-completion-index": "2"}, pod.Labels)
	assert.Equal(t, map[string]string{"batch.kubernetes.io/job-completion-index": "2"}, pod.Annotations)
	assert.Empty(t, pod.Finalizers)

	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"gantry.dev/idle-episode": "7", "deployment.kubernetes.io/revision": "2"}}}
	_, err = newSharedMaps().trimJobCacheObject(dep)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"gantry.dev/idle-episode": "7"}, dep.Annotations, "the idle episode a notebook was scaled for stays")
	assert.Nil(t, dep.Labels)

	at := metav1.Now()
	wl := &kueue.Workload{Status: kueue.WorkloadStatus{
		Conditions: []metav1.Condition{{Type: kueue.WorkloadAdmitted, Status: metav1.ConditionTrue, LastTransitionTime: at}},
		Admission:  &kueue.Admission{ClusterQueue: "team-vision"}, RequeueState: &kueue.RequeueState{Count: new(int32(2))},
		ResourceRequests: []kueue.PodSetRequest{{Name: "main"}}, AdmissionChecks: []kueue.AdmissionCheckState{{Name: "check"}}}}
	_, err = newSharedMaps().trimJobCacheObject(wl)
	require.NoError(t, err)
	assert.Len(t, wl.Status.Conditions, 1, "the conditions the queue explains stay")
	assert.Equal(t, kueue.ClusterQueueReference("team-vision"), wl.Status.Admission.ClusterQueue)
	assert.Nil(t, wl.Status.RequeueState)
	assert.Empty(t, wl.Status.ResourceRequests)
	assert.Empty(t, wl.Status.AdmissionChecks)

	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"gantry.dev/pool": "h100", "nvidia.com/gpu.product": "H100"}}}
	_, err = trimObject(node)
	require.NoError(t, err)
	assert.Len(t, node.Labels, 2, "a node keeps every label")
}

// Objects of one template share one copy of its requests, pool selector,
// flavors and trimmed pod sets; a different request gets its own; past the bound a map is
// kept as it came.
func TestJobCacheSharesEqualMaps(t *testing.T) {
	s := newSharedMaps()
	workload := func(gpus string) *kueue.Workload {
		spec := fatPodSpec()
		spec.Containers[0].Resources.Requests = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse(gpus), "cpu": resource.MustParse("4")}
		return &kueue.Workload{Spec: kueue.WorkloadSpec{PodSets: []kueue.PodSet{{Name: "main", Template: corev1.PodTemplateSpec{Spec: spec}}}},
			Status: kueue.WorkloadStatus{Admission: &kueue.Admission{PodSetAssignments: []kueue.PodSetAssignment{{Name: "main",
				Flavors: map[corev1.ResourceName]kueue.ResourceFlavorReference{"nvidia.com/gpu": "h100"}}}}}}
	}
	mapOf := func(m any) uintptr { return reflect.ValueOf(m).Pointer() }
	a, b, c := workload("8"), workload("8"), workload("4")
	for _, wl := range []*kueue.Workload{a, b, c} {
		_, err := s.trimJobCacheObject(wl)
		require.NoError(t, err)
	}
	pa, pb, pc := a.Spec.PodSets[0].Template.Spec, b.Spec.PodSets[0].Template.Spec, c.Spec.PodSets[0].Template.Spec
	assert.Equal(t, mapOf(pa.Containers[0].Resources.Requests), mapOf(pb.Containers[0].Resources.Requests), "equal requests are one map")
	assert.NotEqual(t, mapOf(pa.Containers[0].Resources.Requests), mapOf(pc.Containers[0].Resources.Requests), "other requests are another")
	assert.Equal(t, "4", pc.Containers[0].Resources.Requests.Name("nvidia.com/gpu", resource.DecimalSI).String())
	assert.Equal(t, mapOf(pa.NodeSelector), mapOf(pc.NodeSelector), "one pool selector")
	assert.Equal(t, mapOf(a.Status.Admission.PodSetAssignments[0].Flavors), mapOf(c.Status.Admission.PodSetAssignments[0].Flavors))
	assert.Same(t, &a.Spec.PodSets[0], &b.Spec.PodSets[0], "equal pod sets are one copy")
	assert.NotSame(t, &a.Spec.PodSets[0], &c.Spec.PodSets[0], "other requests are another pod set")
	assert.Equal(t, 1, cap(a.Spec.PodSets), "the copy kept is as long as the pod sets, not the decoder's array")

	for i := range maxSharedMaps {
		s.stringMap(map[string]string{"k": strconv.Itoa(i)})
	}
	past := map[string]string{"k": "past the bound"}
	assert.Equal(t, mapOf(past), mapOf(s.stringMap(past)))
	assert.Len(t, s.strings, maxSharedMaps, "the kept maps stop growing at the bound")
}
