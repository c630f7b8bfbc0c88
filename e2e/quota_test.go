package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/gantry/internal/naming"
	"github.com/gantry-dev/gantry/internal/teams"
)

const (
	e2eFlavor = "h100-sxm-ib-training"
	e2eGPU    = "nvidia.com/gpu"
)

// TestAdminCreatesTeamResearcherRequestsLeadApproves walks the whole quota
// story in browsers: an admin creates a team for the vision groups with a
// ceiling, a researcher asks for GPUs, the lead approves with a comment and
// the researcher sees the decision; the cluster follows.
func TestAdminCreatesTeamResearcherRequestsLeadApproves(t *testing.T) {
	ctx := context.Background()
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	name := "e2e" + hex.EncodeToString(b)
	// A cohort of its own, so the seeded teams other tests use are not disturbed.
	portal := StartPortal(t, WithEnv("GANTRY_COHORT", "cohort-"+name))
	prov, err := teams.NewProvisioner(portal.Stack.RESTConfig, "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = prov.Delete(context.Background(), name) })

	admin := NewBrowser(t, portal)
	admin.LoginAs("erin")
	admin.Open("/admin/teams")
	admin.Fill("#team-name", name)
	admin.Fill("#team-display-name", "End-to-end team")
	admin.Fill("#team-cost-center", "CC-E2E")
	admin.typeInto("#team-member-groups", "vision-researchers")
	admin.typeInto("#team-lead-groups", "vision-leads")
	admin.Fill(testID("input-ceiling/"+e2eFlavor+"/"+e2eGPU), "4")
	admin.Submit(testID("save-team"))
	assert.Equal(t, "/admin/teams/"+name, admin.Path())
	assert.Contains(t, admin.TestIDText("flash"), "Team "+name+" created")

	ns, err := portal.Stack.Kube.CoreV1().Namespaces().Get(ctx, naming.Namespace(name), metav1.GetOptions{})
	require.NoError(t, err, "the team's namespace exists")
	assert.Equal(t, name, ns.Labels[naming.LabelTeam])
	assert.Equal(t, "CC-E2E", ns.Annotations[naming.AnnotationCostCenter])
	_, err = portal.Stack.Kueue.KueueV1beta2().LocalQueues(ns.Name).Get(ctx, naming.LocalQueue, metav1.GetOptions{})
	require.NoError(t, err, "the team's LocalQueue exists")
	assert.Equal(t, int64(0), nominalGPUs(t, portal, name), "a new team starts without GPUs")
	cq, err := portal.Stack.Kueue.KueueV1beta2().ClusterQueues().Get(ctx, naming.ClusterQueue(name), metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "cohort-"+name, string(cq.Spec.CohortName))

	alice := NewBrowser(t, portal)
	alice.LoginAs("alice")
	alice.Open("/quota-requests")
	alice.choose("#quota-team", name)
	alice.choose("#quota-flavor", e2eFlavor)
	alice.choose("#quota-resource", e2eGPU)
	alice.Fill("#quota-delta", "2")
	alice.typeInto("#quota-reason", "Two more GPUs for the ablation study")
	alice.Submit(testID("submit-request"))
	ids := alice.TestIDsWithPrefix("status-")
	require.Len(t, ids, 1, "alice sees her request")
	id := strings.TrimPrefix(ids[0], "status-")
	assert.Equal(t, "open", alice.TestIDText("status-"+id))

	bob := NewBrowser(t, portal)
	bob.LoginAs("bob")
	assert.Contains(t, bob.TestIDText("approvals-badge"), "1", "the lead sees a badge for the open request")
	bob.Open("/approvals")
	assert.Equal(t, "Two more GPUs for the ablation study", bob.TestIDText("reason-"+id))
	assert.Equal(t, "0", bob.TestIDText("nominal-"+id), "the lead sees the team's quota now")
	bob.typeInto("#comment-"+id, "Approved for the sprint")
	bob.Submit(testID("approve-" + id))
	assert.Contains(t, bob.TestIDText("flash"), "Approved")
	assert.Equal(t, int64(2), nominalGPUs(t, portal, name), "the ClusterQueue's quota was raised")
	assert.Equal(t, "2", bob.TestIDText("grant-nominal-"+id), "the active grant shows the quota from the cluster")

	alice.Open("/quota-requests")
	assert.Equal(t, "approved", alice.TestIDText("status-"+id))
	assert.Contains(t, alice.TestIDText("decision-"+id), "bob")
	assert.Contains(t, alice.TestIDText("decision-"+id), "Approved for the sprint")
	assert.Equal(t, "until revoked", alice.TestIDText("grant-ends-"+id))
	assert.Contains(t, alice.TestIDText("unread-badge"), "1", "the requester has a message")
	alice.Open("/notifications")
	assert.Contains(t, alice.TestIDText("notification"), "bob approved your request")

	admin.Open("/admin/audit?team=" + name)
	for _, action := range []string{"team.create", "quota.request", "quota.approve", "quota.grant"} {
		assert.NotEmpty(t, admin.TestIDsWithPrefix("audit-"), "audit entries for the team")
		assert.True(t, admin.exists(`tr[data-action="`+action+`"]`), "the audit log has %s", action)
	}

	alice.Open("/admin/teams")
	assert.Contains(t, alice.TestIDText("error-page"), "Only Gantry admins", "researchers cannot manage teams")

	admin.Open("/admin/teams/" + name)
	admin.Submit(testID("retire-team"))
	assert.Contains(t, admin.TestIDText("flash"), "retired")
	cq, err = portal.Stack.Kueue.KueueV1beta2().ClusterQueues().Get(ctx, naming.ClusterQueue(name), metav1.GetOptions{})
	require.NoError(t, err)
	require.NotNil(t, cq.Spec.StopPolicy, "a retired team's queue admits nothing new")
	assert.Equal(t, "Hold", string(*cq.Spec.StopPolicy))
}

// typeInto types into an empty field (chromedp cannot clear an empty textarea).
func (b *Browser) typeInto(selector, value string) {
	b.t.Helper()
	b.do("type into "+selector, chromedp.SendKeys(chromedp.CSS(selector), value))
}

// choose selects the option with the value in the <select> matching selector.
func (b *Browser) choose(selector, value string) {
	b.t.Helper()
	b.do("choose "+value+" in "+selector, chromedp.SetValue(chromedp.CSS(selector), value))
}

func nominalGPUs(t *testing.T, p *Portal, team string) int64 {
	t.Helper()
	cq, err := p.Stack.Kueue.KueueV1beta2().ClusterQueues().Get(context.Background(), naming.ClusterQueue(team), metav1.GetOptions{})
	require.NoError(t, err)
	for _, rg := range cq.Spec.ResourceGroups {
		for _, f := range rg.Flavors {
			if string(f.Name) != e2eFlavor {
				continue
			}
			for _, r := range f.Resources {
				if string(r.Name) == e2eGPU {
					return r.NominalQuota.Value()
				}
			}
		}
	}
	t.Fatalf("ClusterQueue of %s has no %s line in %s", team, e2eGPU, e2eFlavor)
	return 0
}
