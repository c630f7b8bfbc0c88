package kube

import (
	"testing"

	"github.com/stretchr/testify/assert"
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
