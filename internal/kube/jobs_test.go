package kube

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	kueuefake "sigs.k8s.io/kueue/client-go/clientset/versioned/fake"

	"github.com/gantry-dev/gantry/internal/naming"
)

func gantryMeta(ns, name, team string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{
		naming.LabelTeam: team, naming.LabelManagedBy: "gantry", naming.LabelInstance: name,
	}}
}

func TestJobCacheFindsGantrysObjectsPodsByInstanceAndWorkloadsByOwner(t *testing.T) {
	kube := kubefake.NewClientset(
		&batchv1.Job{ObjectMeta: gantryMeta("team-vision", "train-a", "vision")},
		&appsv1.StatefulSet{ObjectMeta: gantryMeta("team-vision", "nb-a", "vision")},
		&appsv1.Deployment{ObjectMeta: gantryMeta("team-nlp", "vllm-a", "nlp")},
		&corev1.Pod{ObjectMeta: gantryMeta("team-vision", "train-a", "vision")},
		// Not Gantry's: the informers never see it.
		&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "team-vision", Name: "manual", Labels: map[string]string{naming.LabelTeam: "vision"}}},
	)
	wl := &kueue.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: "team-vision", Name: "job-train-a-1",
		OwnerReferences: []metav1.OwnerReference{{Kind: "Job", Name: "train-a", APIVersion: "batch/v1", UID: "u1"}}}}
	c, err := NewJobCache(kube, kueuefake.NewSimpleClientset(wl), 0)
	require.NoError(t, err)
	_, err = c.Job("team-vision", "train-a")
	require.ErrorIs(t, err, ErrNotSynced, "an unsynced cache does not guess")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c.Start(ctx)
	require.NoError(t, c.WaitForSync(ctx))

	job, err := c.Job("team-vision", "train-a")
	require.NoError(t, err)
	assert.Equal(t, "train-a", job.Name)
	_, err = c.Job("team-vision", "manual")
	assert.ErrorIs(t, err, ErrNotFound, "only Gantry's jobs")
	st, err := c.StatefulSet("team-vision", "nb-a")
	require.NoError(t, err)
	assert.Equal(t, "nb-a", st.Name)

	pods, err := c.Pods("team-vision", "train-a")
	require.NoError(t, err)
	assert.Len(t, pods, 1)
	wls, err := c.WorkloadsOwnedBy("team-vision", "Job", "train-a")
	require.NoError(t, err)
	assert.Equal(t, []string{"job-train-a-1"}, names(wls))

	_, err = c.Deployment("team-vision", "vllm-a")
	assert.ErrorIs(t, err, ErrNotFound)
}
