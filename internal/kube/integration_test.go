package kube

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/gantry-dev/gantry/internal/devcluster/stacktest"
	"github.com/gantry-dev/gantry/internal/identity"
	"github.com/gantry-dev/gantry/internal/naming"
)

// TestImpersonationAndErrorsAgainstAPIServer runs against the local cluster.
func TestImpersonationAndErrorsAgainstAPIServer(t *testing.T) {
	env := stacktest.Stack(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	cfg, err := RESTConfig(env.Kubeconfig)
	require.NoError(t, err)

	names := identity.Prefixes{UserPrefix: "oidc:", GroupPrefix: "oidc:"}
	alice, err := NewClients(ForUser(cfg, names, "alice", []string{"vision-researchers"}))
	require.NoError(t, err)
	review, err := alice.Kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, "oidc:alice", review.Status.UserInfo.Username)
	assert.Contains(t, review.Status.UserInfo.Groups, "oidc:vision-researchers")
	assert.NotContains(t, review.Status.UserInfo.Groups, "vision-researchers", "IdP groups reach the API server prefixed only")

	admin, err := NewClients(cfg)
	require.NoError(t, err)
	_, err = admin.Kube.CoreV1().Namespaces().Get(ctx, "does-not-exist-gantry", metav1.GetOptions{})
	assert.True(t, errors.Is(MapError(err), ErrNotFound), "got %v", err)

	frank, err := NewClients(ForUser(cfg, names, "frank", nil))
	require.NoError(t, err)
	_, err = frank.Kube.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{})
	assert.True(t, errors.Is(MapError(err), ErrForbidden), "got %v", err)

	ns := env.Namespace(t, "kube-errors", nil)
	_, err = admin.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	assert.True(t, errors.Is(MapError(err), ErrConflict), "got %v", err)
}

// TestPrefixedImpersonationAgainstAPIServer checks, against the real API
// server, that an IdP name spelling a system identity gains nothing through
// the portal, and that a researcher still gets what their team's
// RoleBinding (which binds the prefixed group) allows.
func TestPrefixedImpersonationAgainstAPIServer(t *testing.T) {
	env := stacktest.Stack(t)
	team := env.Team(t, stacktest.TeamSpec{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	names := identity.Prefixes{}

	can := func(t *testing.T, cfg *rest.Config, verb, group, resource, ns string) bool {
		t.Helper()
		c, err := NewClients(cfg)
		require.NoError(t, err)
		r, err := c.Kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authzv1.SelfSubjectAccessReview{
			Spec: authzv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authzv1.ResourceAttributes{
				Namespace: ns, Verb: verb, Group: group, Resource: resource}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		return r.Status.Allowed
	}

	researcher := ForUser(env.RESTConfig, names, "alice", []string{team.MemberGroups[0]})
	assert.True(t, can(t, researcher, "create", "batch", "jobs", team.Namespace()), "a researcher launches in their team through the portal")
	assert.False(t, can(t, researcher, "create", "batch", "jobs", "kube-system"), "but not outside it")

	masters := ForUser(env.RESTConfig, names, "system:kube-controller-manager", []string{"system:masters"})
	assert.Equal(t, "oidc:system:kube-controller-manager", masters.Impersonate.UserName)
	assert.Equal(t, []string{"oidc:system:masters"}, masters.Impersonate.Groups)
	assert.False(t, can(t, masters, "list", "", "secrets", "kube-system"), "system:masters from the IdP is no cluster admin")
	assert.False(t, can(t, masters, "create", "batch", "jobs", team.Namespace()))

	unprefixed := rest.CopyConfig(env.RESTConfig)
	unprefixed.Impersonate = rest.ImpersonationConfig{UserName: "alice", Groups: []string{team.MemberGroups[0]}}
	assert.False(t, can(t, unprefixed, "create", "batch", "jobs", team.Namespace()), "team RoleBindings bind the prefixed group only")
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

// Jobs decoded from the API server's watch are kept with one copy of the
// labels the launches of one owner and template share, and read back with
// their own instance.
func TestCachedJobsShareTheirLabels(t *testing.T) {
	env := stacktest.Stack(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	team := env.Team(t, stacktest.TeamSpec{})
	clients, err := NewClients(env.RESTConfig)
	require.NoError(t, err)
	names := []string{"share-a", "share-b", "share-c"}
	for _, name := range names {
		job := stacktest.CompliantJob(team.Name, name, corev1.ResourceList{"cpu": resource.MustParse("100m")})
		job.Spec.Suspend = new(true)
		_, err := clients.Kube.BatchV1().Jobs(team.Namespace()).Create(ctx, job, metav1.CreateOptions{})
		require.NoError(t, err)
	}

	c, err := NewJobCache(clients.Kube, clients.Kueue, 0)
	require.NoError(t, err)
	c.Start(ctx)
	require.NoError(t, c.WaitForSync(ctx))
	var kept []*cachedJob
	require.Eventually(t, func() bool {
		kept = kept[:0]
		for _, name := range names {
			obj, ok, _ := c.jobs.GetStore().GetByKey(team.Namespace() + "/" + name)
			if !ok {
				return false
			}
			kept = append(kept, obj.(*cachedJob))
		}
		return true
	}, 20*time.Second, 50*time.Millisecond)
	for i, j := range kept {
		assert.True(t, j.instanceIsName, "%s", names[i])
		assert.Equal(t, reflect.ValueOf(kept[0].Labels).Pointer(), reflect.ValueOf(j.Labels).Pointer(), "%s shares the labels", names[i])
		job, err := c.Job(team.Namespace(), names[i])
		require.NoError(t, err)
		assert.Equal(t, names[i], job.Labels[naming.LabelInstance])
		assert.Equal(t, team.Name, job.Labels[naming.LabelTeam])
	}
}
