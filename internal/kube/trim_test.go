package kube

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	kueuefake "sigs.k8s.io/kueue/client-go/clientset/versioned/fake"
)

// bloat adds what the caches drop: managedFields and kubectl's copy of the
// object, beside an annotation pages read (the idle episode a notebook was
// last scaled for).
func bloat(m metav1.ObjectMeta) metav1.ObjectMeta {
	m.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply,
		FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:labels":{}}}`)}}
	m.Annotations = map[string]string{corev1.LastAppliedConfigAnnotation: `{"kind":"Job"}`, "gantry.dev/idle-episode": "7"}
	return m
}

func TestCachesDropManagedFieldsAndLastApplied(t *testing.T) {
	job := &batchv1.Job{ObjectMeta: bloat(gantryMeta("team-vision", "train-a", "vision")),
		Spec: batchv1.JobSpec{Parallelism: new(int32(2))}}
	wl := &kueue.Workload{ObjectMeta: bloat(metav1.ObjectMeta{Namespace: "team-vision", Name: "job-train-a-1",
		OwnerReferences: []metav1.OwnerReference{{Kind: "Job", Name: "train-a", APIVersion: "batch/v1", UID: "u1"}}}),
		Spec: kueue.WorkloadSpec{QueueName: "default"}}
	node := &corev1.Node{ObjectMeta: bloat(metav1.ObjectMeta{Name: "gpu-0", Labels: map[string]string{"pool": "h100"}}),
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")},
			Capacity:   corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Message: "kubelet is posting ready status"}},
			NodeInfo:   corev1.NodeSystemInfo{KubeletVersion: "fake", OperatingSystem: "linux"},
			Images:     []corev1.ContainerImage{{Names: []string{"nvcr.io/nvidia/pytorch:24.01"}, SizeBytes: 20 << 30}}}}
	kc := kubefake.NewClientset(job, node)
	jobs, err := NewJobCache(kc, kueuefake.NewSimpleClientset(wl), 0)
	require.NoError(t, err)
	nodes := NewNodeCache(kc, 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	jobs.Start(ctx)
	nodes.Start(ctx)
	require.NoError(t, jobs.WaitForSync(ctx))
	require.NoError(t, nodes.WaitForSync(ctx))

	cases := map[string]struct {
		meta func() metav1.Object
		// noAnnotations: no page reads a Node's annotations, so none is kept.
		noAnnotations bool
	}{
		"job": {meta: func() metav1.Object {
			j, err := jobs.Job("team-vision", "train-a")
			require.NoError(t, err)
			assert.Equal(t, int32(2), *j.Spec.Parallelism, "the spec stays")
			return j
		}},
		"workload": {meta: func() metav1.Object {
			wls, err := jobs.WorkloadsOwnedBy("team-vision", "Job", "train-a")
			require.NoError(t, err)
			require.Len(t, wls, 1, "still indexed by owner")
			return wls[0]
		}},
		"node": {meta: func() metav1.Object {
			n, err := nodes.lister.Get("gpu-0")
			require.NoError(t, err)
			assert.Empty(t, n.Status.Images, "the image list is dropped")
			assert.Empty(t, n.Status.Conditions, "heartbeats are not kept")
			assert.Empty(t, n.Status.Capacity, "only allocatable is read")
			assert.Equal(t, "h100", n.Labels["pool"], "the pool label stays")
			assert.Equal(t, "8", n.Status.Allocatable.Name("nvidia.com/gpu", resource.DecimalSI).String(), "capacity stays")
			return n
		}, noAnnotations: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			m := tc.meta()
			assert.Empty(t, m.GetManagedFields())
			assert.NotContains(t, m.GetAnnotations(), corev1.LastAppliedConfigAnnotation)
			if tc.noAnnotations {
				assert.Empty(t, m.GetAnnotations())
				return
			}
			assert.Equal(t, "7", m.GetAnnotations()["gantry.dev/idle-episode"], "annotations pages read stay")
		})
	}
}
