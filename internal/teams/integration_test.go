package teams_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/gantry-dev/gantry/internal/devcluster/stacktest"
	"github.com/gantry-dev/gantry/internal/identity"
	"github.com/gantry-dev/gantry/internal/kube"
	"github.com/gantry-dev/gantry/internal/naming"
	"github.com/gantry-dev/gantry/internal/roster"
	"github.com/gantry-dev/gantry/internal/teams"
)

func clusterFlavors(t *testing.T, env *stacktest.Env) []teams.Flavor {
	t.Helper()
	ctx := context.Background()
	rfs, err := env.Kueue.KueueV1beta2().ResourceFlavors().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	nodes, err := env.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	var ptrs []*kueue.ResourceFlavor
	for i := range rfs.Items {
		ptrs = append(ptrs, &rfs.Items[i])
	}
	flavors, err := teams.FlavorsOf(ptrs, func(rf *kueue.ResourceFlavor) (corev1.ResourceList, error) {
		out := corev1.ResourceList{}
		for _, n := range nodes.Items {
			match := len(rf.Spec.NodeLabels) > 0
			for k, v := range rf.Spec.NodeLabels {
				match = match && n.Labels[k] == v
			}
			if match {
				for r, q := range n.Status.Allocatable {
					out[r] = q
				}
			}
		}
		return out, nil
	})
	require.NoError(t, err)
	require.NotEmpty(t, flavors)
	return flavors
}

func randomTeam(t *testing.T) teams.Spec {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	name := "p" + hex.EncodeToString(b)
	return teams.Spec{Team: roster.Team{Name: name, DisplayName: "Provisioned " + name, CostCenter: "CC-9",
		MemberGroups: []string{name + "-researchers"}, LeadGroups: []string{name + "-leads"}}, BorrowCPUAndMemory: true}
}

func TestCreatingATeamMakesItsObjectsAndAResearcherCanLaunch(t *testing.T) {
	env := stacktest.Stack(t)
	ctx := context.Background()
	flavors := clusterFlavors(t, env)
	p, err := teams.NewProvisioner(env.RESTConfig, "")
	require.NoError(t, err)
	team := randomTeam(t)
	team.Quotas = teams.ZeroQuotas(flavors)
	t.Cleanup(func() { _ = p.Delete(context.Background(), team.Name) })

	require.NoError(t, p.Apply(ctx, team, "cohort-"+team.Name, flavors, teams.ApplyOptions{KeepQuota: true}))
	require.NoError(t, p.Apply(ctx, team, "cohort-"+team.Name, flavors, teams.ApplyOptions{KeepQuota: true}), "creating is idempotent")

	ns, err := env.Kube.CoreV1().Namespaces().Get(ctx, team.Namespace(), metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, team.Name, ns.Labels[naming.LabelTeam])
	assert.Equal(t, "restricted", ns.Labels["pod-security.kubernetes.io/enforce"])
	rbs, err := env.Kube.RbacV1().RoleBindings(team.Namespace()).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, rbs.Items, 2)
	_, err = env.Kube.CoreV1().ResourceQuotas(team.Namespace()).Get(ctx, naming.ResourceQuota, metav1.GetOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		cq, err := env.Kueue.KueueV1beta2().ClusterQueues().Get(ctx, team.ClusterQueue(), metav1.GetOptions{})
		lq, lqErr := env.Kueue.KueueV1beta2().LocalQueues(team.Namespace()).Get(ctx, naming.LocalQueue, metav1.GetOptions{})
		_, saErr := env.Kube.CoreV1().ServiceAccounts(team.Namespace()).Get(ctx, "default", metav1.GetOptions{})
		return err == nil && lqErr == nil && saErr == nil && active(cq.Status.Conditions) && active(lq.Status.Conditions)
	}, time.Minute, 200*time.Millisecond, "the team's queues become active")

	researcher, err := kubernetes.NewForConfig(kube.ForUser(env.RESTConfig, identity.Prefixes{}, "rita", []string{team.MemberGroups[0]}))
	require.NoError(t, err)
	_, err = researcher.BatchV1().Jobs(team.Namespace()).Create(ctx, stacktest.OwnedBy(stacktest.CompliantJob(team.Name, "first-run", nil), "rita"), metav1.CreateOptions{})
	require.NoError(t, err, "a researcher of the team launches as themselves")

	outsider, err := kubernetes.NewForConfig(kube.ForUser(env.RESTConfig, identity.Prefixes{}, "olga", []string{"other-researchers"}))
	require.NoError(t, err)
	_, err = outsider.BatchV1().Jobs(team.Namespace()).Create(ctx, stacktest.CompliantJob(team.Name, "intruder", nil), metav1.CreateOptions{})
	assert.True(t, apierrors.IsForbidden(err), "someone outside the team is refused by RBAC: %v", err)

	require.NoError(t, p.Hold(ctx, team.Name, true))
	cq, err := env.Kueue.KueueV1beta2().ClusterQueues().Get(ctx, team.ClusterQueue(), metav1.GetOptions{})
	require.NoError(t, err)
	require.NotNil(t, cq.Spec.StopPolicy)
	assert.Equal(t, kueue.Hold, *cq.Spec.StopPolicy, "a retired team admits nothing new")
	require.NoError(t, p.Apply(ctx, team, "cohort-"+team.Name, flavors, teams.ApplyOptions{KeepQuota: true}))
	cq, err = env.Kueue.KueueV1beta2().ClusterQueues().Get(ctx, team.ClusterQueue(), metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, kueue.Hold, *cq.Spec.StopPolicy, "editing the team keeps it on hold")
}

func TestFailedCreateLeavesNothingBehind(t *testing.T) {
	env := stacktest.Stack(t)
	ctx := context.Background()
	flavors := clusterFlavors(t, env)
	p, err := teams.NewProvisioner(env.RESTConfig, "")
	require.NoError(t, err)
	team := randomTeam(t)
	team.Quotas = teams.ZeroQuotas(flavors)
	team.LeadGroups = []string{""} // the API server refuses a RoleBinding subject without a name
	t.Cleanup(func() { _ = p.Delete(context.Background(), team.Name) })

	require.Error(t, p.Apply(ctx, team, "cohort-"+team.Name, flavors, teams.ApplyOptions{KeepQuota: true}))
	require.Eventually(t, func() bool {
		_, err := env.Kueue.KueueV1beta2().ClusterQueues().Get(ctx, team.ClusterQueue(), metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, 30*time.Second, 200*time.Millisecond, "the ClusterQueue is removed again")
	require.Eventually(t, func() bool {
		ns, err := env.Kube.CoreV1().Namespaces().Get(ctx, team.Namespace(), metav1.GetOptions{})
		return apierrors.IsNotFound(err) || (err == nil && ns.DeletionTimestamp != nil)
	}, 30*time.Second, 200*time.Millisecond, "the namespace is being deleted")
}

func active(conds []metav1.Condition) bool {
	for _, c := range conds {
		if c.Type == kueue.ClusterQueueActive && c.Status == metav1.ConditionTrue {
			return true
		}
	}
	return false
}

// TestProvisionerBindsGroupsWithTheConfiguredPrefix: a portal configured
// with its own group prefix binds the team's groups under that prefix, and
// a researcher impersonated with the same prefixes can launch.
func TestProvisionerBindsGroupsWithTheConfiguredPrefix(t *testing.T) {
	env := stacktest.Stack(t)
	ctx := context.Background()
	flavors := clusterFlavors(t, env)
	names := identity.Prefixes{UserPrefix: "corp-user:", GroupPrefix: "corp-group:"}
	p, err := teams.NewProvisioner(env.RESTConfig, "", teams.WithIdentities(names))
	require.NoError(t, err)
	team := randomTeam(t)
	team.Quotas = teams.ZeroQuotas(flavors)
	t.Cleanup(func() { _ = p.Delete(context.Background(), team.Name) })
	require.NoError(t, p.Apply(ctx, team, "cohort-"+team.Name, flavors, teams.ApplyOptions{KeepQuota: true}))

	rb, err := env.Kube.RbacV1().RoleBindings(team.Namespace()).Get(ctx, "gantry-researchers", metav1.GetOptions{})
	require.NoError(t, err)
	require.Len(t, rb.Subjects, 1)
	assert.Equal(t, "corp-group:"+team.MemberGroups[0], rb.Subjects[0].Name)

	require.Eventually(t, func() bool {
		_, err := env.Kube.CoreV1().ServiceAccounts(team.Namespace()).Get(ctx, "default", metav1.GetOptions{})
		return err == nil
	}, time.Minute, 200*time.Millisecond, "the namespace's default ServiceAccount")
	researcher, err := kubernetes.NewForConfig(kube.ForUser(env.RESTConfig, names, "rita", []string{team.MemberGroups[0]}))
	require.NoError(t, err)
	_, err = researcher.BatchV1().Jobs(team.Namespace()).Create(ctx, stacktest.CompliantJob(team.Name, "prefixed", nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	assert.NoError(t, err, "a researcher impersonated with the same prefixes launches")
	defaultPrefixed, err := kubernetes.NewForConfig(kube.ForUser(env.RESTConfig, identity.Prefixes{}, "rita", []string{team.MemberGroups[0]}))
	require.NoError(t, err)
	_, err = defaultPrefixed.BatchV1().Jobs(team.Namespace()).Create(ctx, stacktest.CompliantJob(team.Name, "other-prefix", nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	assert.True(t, apierrors.IsForbidden(err), "the same group under another prefix is someone else: %v", err)
}
