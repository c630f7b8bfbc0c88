package kube

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	kueuefake "sigs.k8s.io/kueue/client-go/clientset/versioned/fake"

	"github.com/gantry-dev/gantry/internal/naming"
)

func kueueGVK(kind string) schema.GroupVersionKind { return kueue.GroupVersion.WithKind(kind) }

func corev1GVK(kind string) schema.GroupVersionKind { return corev1.SchemeGroupVersion.WithKind(kind) }

func clusterQueue(name, team string) *kueue.ClusterQueue {
	cq := &kueue.ClusterQueue{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if team != "" {
		cq.Labels = map[string]string{naming.LabelTeam: team}
	}
	return cq
}

func localQueue(ns, name, cq, team string) *kueue.LocalQueue {
	lq := &kueue.LocalQueue{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	lq.Spec.ClusterQueue = kueue.ClusterQueueReference(cq)
	if team != "" {
		lq.Labels = map[string]string{naming.LabelTeam: team}
	}
	return lq
}

func names[T interface{ GetName() string }](objs []T) []string {
	out := []string{}
	for _, o := range objs {
		out = append(out, o.GetName())
	}
	return out
}

func TestCacheIndexes(t *testing.T) {
	client := kueuefake.NewSimpleClientset(
		clusterQueue("team-vision", "vision"),
		clusterQueue("vision-burst", "vision"),
		clusterQueue("team-nlp", "nlp"),
		clusterQueue("unlabelled", ""),
		localQueue("team-vision", "default", "team-vision", ""),
		localQueue("team-vision", "batch", "team-vision", "vision"),
		localQueue("team-nlp", "default", "team-nlp", "nlp"),
		&kueue.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: "h100"}},
		&kueue.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: "a100"}},
	)
	c, err := NewCache(client, 0)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c.Start(ctx)
	require.NoError(t, c.WaitForSync(ctx))
	assert.True(t, c.HasSynced())

	cqs, err := c.TeamClusterQueues("vision")
	require.NoError(t, err)
	assert.Equal(t, []string{"team-vision", "vision-burst"}, names(cqs))

	cqs, err = c.TeamClusterQueues("nobody")
	require.NoError(t, err)
	assert.Empty(t, cqs)

	lqs, err := c.LocalQueuesFor("team-vision")
	require.NoError(t, err)
	assert.Equal(t, []string{"batch", "default"}, names(lqs))

	lqs, err = c.TeamLocalQueues("vision")
	require.NoError(t, err)
	assert.Equal(t, []string{"batch"}, names(lqs))

	cq, err := c.ClusterQueue("unlabelled")
	require.NoError(t, err)
	assert.Equal(t, "unlabelled", cq.Name)

	_, err = c.ClusterQueue("missing")
	assert.True(t, errors.Is(err, ErrNotFound), "got %v", err)
	_, err = c.ResourceFlavor("missing")
	assert.True(t, errors.Is(err, ErrNotFound), "got %v", err)

	assert.Equal(t, []string{"a100", "h100"}, names(c.ResourceFlavors()))

	// Changes arrive through the watch, not a re-list.
	_, err = client.KueueV1beta2().ClusterQueues().Create(ctx, clusterQueue("team-platform", "platform"), metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Eventually(t, func() bool {
		cqs, err := c.TeamClusterQueues("platform")
		return err == nil && len(cqs) == 1
	}, 10*time.Second, 20*time.Millisecond)
}

func TestWaitForSyncGivesUpWithContext(t *testing.T) {
	c, err := NewCache(kueuefake.NewSimpleClientset(), 0)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// Not started: it can never sync, so only the context ends the wait.
	err = c.WaitForSync(ctx)
	require.Error(t, err)
	assert.ErrorIs(t, err, context.Canceled)
}
