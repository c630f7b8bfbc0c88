package reclaim_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gantry-dev/gantry/internal/devcluster/stacktest"
	"github.com/gantry-dev/gantry/internal/naming"
	"github.com/gantry-dev/gantry/internal/reclaim"
)

// TestKubeScalerAppliesAnEpisodeOnce against the API server: a notebook's
// StatefulSet is stopped for episode 7; its owner starts it again; the
// stop redone for episode 7 (a new leader) leaves it running, and the
// next episode stops it again.
func TestKubeScalerAppliesAnEpisodeOnce(t *testing.T) {
	env := stacktest.Stack(t)
	ns := env.Namespace(t, "reclaim", nil)
	ctx := context.Background()
	labels := map[string]string{"app": "nb"}
	sets := env.Kube.AppsV1().StatefulSets(ns)
	_, err := sets.Create(ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "nb"}, Spec: appsv1.StatefulSetSpec{
		Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: stacktest.Image}}}}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	replicas := func() int32 {
		s, err := sets.Get(ctx, "nb", metav1.GetOptions{})
		require.NoError(t, err)
		return *s.Spec.Replicas
	}
	s := reclaim.KubeScaler{Client: env.Kube}

	changed, err := s.ScaleStatefulSet(ctx, ns, "nb", 0, 7)
	require.NoError(t, err)
	assert.True(t, changed)
	assert.Equal(t, int32(0), replicas())
	got, err := sets.Get(ctx, "nb", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "7", got.Annotations[naming.AnnotationIdleEpisode])

	resume := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "nb", Namespace: ns}, Spec: autoscalingv1.ScaleSpec{Replicas: 1}}
	_, err = sets.UpdateScale(ctx, "nb", resume, metav1.UpdateOptions{}) // the owner resumes, as from the job page
	require.NoError(t, err)
	changed, err = s.ScaleStatefulSet(ctx, ns, "nb", 0, 7)
	require.NoError(t, err)
	assert.False(t, changed, "episode 7 was applied already")
	assert.Equal(t, int32(1), replicas(), "the owner's resume stands")

	changed, err = s.ScaleStatefulSet(ctx, ns, "nb", 0, 8)
	require.NoError(t, err)
	assert.True(t, changed)
	assert.Equal(t, int32(0), replicas())
}
