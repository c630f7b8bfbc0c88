package views

import (
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
)

func TestApprovalCardExplainsTheDecision(t *testing.T) {
	until := time.Date(2026, 12, 24, 0, 0, 0, 0, time.UTC)
	base := QuotaRequestRow{ID: 7, Team: "vision", Flavor: "h100", Resource: "nvidia.com/gpu", Delta: 4, Until: &until, Reason: "deadline", Requester: "alice", Status: "open"}
	cases := map[string]struct {
		row         ApprovalRow
		wantApprove bool
		wantWarning bool
		wantOwn     bool
	}{
		"within the ceiling": {
			row:         ApprovalRow{QuotaRequestRow: base, Known: true, Nominal: 8, NewNominal: 12, Ceiling: 16, HasCeiling: true},
			wantApprove: true,
		},
		"above the ceiling": {
			row: ApprovalRow{QuotaRequestRow: base, Known: true, Nominal: 8, NewNominal: 12, Ceiling: 10, HasCeiling: true, CannotApprove: "only an admin"},
		},
		"more than the pool has": {
			row:         ApprovalRow{QuotaRequestRow: base, Known: true, Physical: 16, PhysicalWarning: "Warning: the pool has only 16."},
			wantApprove: true, wantWarning: true,
		},
		"own request": {
			row:     ApprovalRow{QuotaRequestRow: base, Own: true},
			wantOwn: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			doc := render(t, ApprovalsPage(Nav{User: bob, PendingApprovals: 1}, ApprovalsProps{Requests: []ApprovalRow{tc.row}}))
			assert.Equal(t, "deadline", text(byTestID(doc, "reason-7")))
			assert.Equal(t, tc.wantApprove, byTestID(doc, "approve-7").Length() == 1, "approve button")
			assert.Equal(t, !tc.wantOwn, byTestID(doc, "reject-7").Length() == 1, "reject button")
			assert.Equal(t, tc.wantWarning, byTestID(doc, "physical-warning-7").Length() == 1, "physical warning")
			assert.Equal(t, tc.wantOwn, byTestID(doc, "own-7").Length() == 1, "own request note")
		})
	}
}

func TestQuotaPageShowsStatusDecisionAndGrantEnd(t *testing.T) {
	ends := time.Date(2026, 12, 24, 0, 0, 0, 0, time.UTC)
	doc := render(t, QuotaPage(Nav{User: alice, UnreadNotifications: 2}, QuotaPageProps{
		Teams:   []string{"vision"},
		Flavors: []QuotaFlavorOption{{Flavor: "h100", Resources: []string{"nvidia.com/gpu"}}},
		Mine: []QuotaRequestRow{
			{ID: 1, Team: "vision", Flavor: "h100", Resource: "nvidia.com/gpu", Delta: 2, Status: "approved", DecidedBy: "bob", Comment: "ok"},
			{ID: 2, Team: "vision", Flavor: "h100", Resource: "nvidia.com/gpu", Delta: -1, Status: "open", CanWithdraw: true},
		},
		Grants: []QuotaGrantRow{{RequestID: 1, Team: "vision", Flavor: "h100", Resource: "nvidia.com/gpu", Delta: 2, ExpiresAt: &ends, Nominal: 10}},
	}))
	assert.Equal(t, "approved", text(byTestID(doc, "status-1")))
	assert.Equal(t, "bob: ok", text(byTestID(doc, "decision-1")))
	assert.Zero(t, byTestID(doc, "withdraw-1").Length(), "a decided request cannot be withdrawn")
	assert.Equal(t, 1, byTestID(doc, "withdraw-2").Length())
	assert.Equal(t, "10", text(byTestID(doc, "grant-nominal-1")))
	assert.Contains(t, text(byTestID(doc, "grant-ends-1")), "2026")
	assert.Equal(t, "2 unread", text(byTestID(doc, "unread-badge")))
}

func TestTeamWithoutGPUQuotaIsToldSoInsteadOfAnEmptyTable(t *testing.T) {
	doc := render(t, TeamStatusPage(Nav{User: bob}, TeamStatusProps{Team: "vision"}))
	assert.Equal(t, "No GPU quota, and no GPUs in use, in any pool.", text(byTestID(doc, "team-quota-none")))
	assert.Zero(t, byTestID(doc, "team-quota").Length())
}

func TestTeamWhoseQuotaCannotBeReadIsNotToldItHasNone(t *testing.T) {
	doc := render(t, TeamStatusPage(Nav{User: bob}, TeamStatusProps{Team: "vision", Error: "The cluster's state is still loading."}))
	assert.Zero(t, byTestID(doc, "team-quota-none").Length())
}

// An admin in no team is not left on a page that says only that: they
// are pointed at the cluster, approvals and teams.
func TestHomeOfAnAdminInNoTeamSaysWhereToStart(t *testing.T) {
	doc := render(t, HomePage(Nav{User: erin, PendingApprovals: 2}, HomeProps{}))
	admin := byTestID(doc, "no-teams-admin")
	assert.Contains(t, text(admin), "(2 waiting)")
	var links []string
	admin.Find("a").Each(func(_ int, a *goquery.Selection) { links = append(links, a.AttrOr("href", "")) })
	assert.Equal(t, []string{"/admin/cluster", "/approvals", "/admin/teams"}, links)
}
