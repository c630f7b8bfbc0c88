package kube

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/gantry/internal/devcluster/stacktest"
)

// TestImpersonationAndErrorsAgainstAPIServer runs against the local cluster.
func TestImpersonationAndErrorsAgainstAPIServer(t *testing.T) {
	env := stacktest.Stack(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	cfg, err := RESTConfig(env.Kubeconfig)
	require.NoError(t, err)

	alice, err := NewClients(ForUser(cfg, "alice", []string{"vision-researchers"}))
	require.NoError(t, err)
	review, err := alice.Kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, "alice", review.Status.UserInfo.Username)
	assert.Contains(t, review.Status.UserInfo.Groups, "vision-researchers")

	admin, err := NewClients(cfg)
	require.NoError(t, err)
	_, err = admin.Kube.CoreV1().Namespaces().Get(ctx, "does-not-exist-gantry", metav1.GetOptions{})
	assert.True(t, errors.Is(MapError(err), ErrNotFound), "got %v", err)

	frank, err := NewClients(ForUser(cfg, "frank", nil))
	require.NoError(t, err)
	_, err = frank.Kube.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{})
	assert.True(t, errors.Is(MapError(err), ErrForbidden), "got %v", err)

	ns := env.Namespace(t, "kube-errors", nil)
	_, err = admin.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	assert.True(t, errors.Is(MapError(err), ErrConflict), "got %v", err)
}

// TestCacheSyncsFromAPIServer starts the informer cache against the local
// cluster and sees the seeded team queues.
func TestCacheSyncsFromAPIServer(t *testing.T) {
	env := stacktest.Stack(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	clients, err := NewClients(env.RESTConfig)
	require.NoError(t, err)
	c, err := NewCache(clients.Kueue, 0)
	require.NoError(t, err)
	c.Start(ctx)
	require.NoError(t, c.WaitForSync(ctx))

	cqs, err := c.TeamClusterQueues("vision")
	require.NoError(t, err)
	require.NotEmpty(t, cqs, "seeded team vision has a labelled ClusterQueue")
	assert.Equal(t, "team-vision", cqs[0].Name)

	lqs, err := c.LocalQueuesFor("team-vision")
	require.NoError(t, err)
	require.NotEmpty(t, lqs)
	assert.Equal(t, "team-vision", lqs[0].Namespace)

	assert.NotEmpty(t, c.ResourceFlavors(), "flavors from deploy/local/pools.yaml")

	// A new ClusterQueue reaches the cache through the watch.
	team := "kube-cache-test"
	cq := clusterQueue("", team)
	cq.GenerateName = "kube-cache-test-"
	created, err := clients.Kueue.KueueV1beta2().ClusterQueues().Create(ctx, cq, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = clients.Kueue.KueueV1beta2().ClusterQueues().Delete(ctx, created.Name, metav1.DeleteOptions{})
	})
	assert.Eventually(t, func() bool {
		cqs, err := c.TeamClusterQueues(team)
		return err == nil && len(cqs) == 1 && cqs[0].Name == created.Name
	}, 20*time.Second, 50*time.Millisecond)
}
