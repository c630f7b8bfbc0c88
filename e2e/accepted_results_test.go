package e2e

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gantry-dev/gantry/internal/cost"
	"github.com/gantry-dev/gantry/internal/devcluster/stacktest"
	"github.com/gantry-dev/gantry/internal/money"
	"github.com/gantry-dev/gantry/internal/roster"
	"github.com/gantry-dev/gantry/internal/store"
)

// acceptedTeam is a throwaway team whose members are vision's IdP groups
// (alice researcher, bob lead), a portal that knows it, and its database.
func acceptedTeam(t *testing.T) (string, *Portal, *store.Store) {
	t.Helper()
	env := stacktest.Stack(t)
	team := env.Team(t, stacktest.TeamSpec{MemberGroups: []string{"vision-researchers"}, LeadGroups: []string{"vision-leads"}})
	dsn := stacktest.Postgres(t)
	portal := StartPortal(t, WithDatabase(dsn))
	ctx := context.Background()
	db, err := store.Open(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	require.NoError(t, store.Migrate(ctx, db.SQL(), slog.New(slog.DiscardHandler)))
	require.NoError(t, db.UpsertTeams(ctx, []roster.Team{{Name: team.Name, DisplayName: "Accepted results test team",
		MemberGroups: store.StringList{"vision-researchers"}, LeadGroups: store.StringList{"vision-leads"}}}))
	return team.Name, portal, db
}

// TestLeadAcceptsARunAndSeesTheCostPerAcceptedRunChange: a team has two
// finished training runs in this month's ledger, one succeeded and one
// failed ($40 in all). No run is accepted, so the team page has no cost
// per accepted run; the lead accepts the succeeded one on its job page and
// the team page then says an accepted run cost $40.00.
func TestLeadAcceptsARunAndSeesTheCostPerAcceptedRunChange(t *testing.T) {
	team, portal, db := acceptedTeam(t)
	ctx := context.Background()

	ns := "team-" + team
	ended := time.Now().UTC().Add(-time.Second)
	for _, r := range []struct {
		job, outcome, cause, usd string
		hours                    float64
	}{
		{"train-good", cost.OutcomeSucceeded, "", "32", 8},
		{"train-oom", cost.OutcomeFailed, "out-of-memory", "8", 2},
	} {
		usd, err := money.Parse(r.usd)
		require.NoError(t, err)
		_, err = db.RecordRun(ctx, store.LedgerRow{RunKey: r.job + "@1", WorkloadUID: r.job, Team: team, Namespace: ns, JobName: r.job,
			JobKind: "Job", Flavor: statusH100, Resource: "nvidia.com/gpu", GPUs: 8, CreatedAt: ended.Add(-2 * time.Hour),
			AdmittedAt: ended.Add(-time.Hour), EndedAt: ended, Outcome: r.outcome, Cause: r.cause, AllocatedGPUHours: r.hours,
			USDPerHour: 4 * money.Dollar, CostUSD: usd})
		require.NoError(t, err)
		// The jobs finished and their owner deleted them: their pages stay.
		_, err = db.RecordLaunch(ctx, store.Launch{LaunchID: r.job, Team: team, Namespace: ns, Name: r.job, Kind: "training",
			Template: "pytorch-train", TemplateVersion: 1, Owner: "alice", Parameters: []byte(`{}`), CreatedAt: ended.Add(-2 * time.Hour)})
		require.NoError(t, err)
		require.NoError(t, db.MarkLaunchDeleted(ctx, ns, r.job, "alice", ended))
	}

	b := NewBrowser(t, portal)
	b.LoginAs("bob")
	b.Open("/teams/" + team)
	assert.Contains(t, b.TestIDText("per-accepted-run"), "– per accepted run (0 accepted")
	assert.Equal(t, "$40.00", b.TestIDText("term-total"), "the month's effective cost")
	assert.Equal(t, "$8.00", b.TestIDText("term-failed"))
	assert.Contains(t, b.TestIDText("cause-out-of-memory"), "$8.00", "failed-run cost by cause")

	b.Open("/teams/" + team + "/jobs/train-good")
	assert.Contains(t, b.TestIDText("verdict-state"), "No verdict on this result yet")
	b.Fill(testID("verdict-note"), "checkpoint passes the eval")
	b.Submit(testID("accept"))
	assert.Contains(t, b.TestIDText("verdict-state"), "Result accepted by bob")
	assert.Contains(t, b.TestIDText("verdict-state"), "checkpoint passes the eval")

	b.Open("/teams/" + team)
	assert.Contains(t, b.TestIDText("per-accepted-run"), "$40.00 per accepted run (1 accepted, 0 of them by the team's rule; 0 rejected)")
	assert.Contains(t, b.TestIDText("cost-trend"), "$40.00")

	// The verdict is in the audit log, by bob.
	entries, err := db.AuditEntries(ctx, store.AuditFilter{Action: cost.ActionVerdict})
	require.NoError(t, err)
	require.Len(t, entries, 1)
	assert.Equal(t, "bob", entries[0].Actor)
	assert.Equal(t, ns+"/train-good", entries[0].Target)
	assert.Empty(t, b.ConsoleErrors())
}

// TestAdminEntersSharedCostsAndTheTeamPageComparesWithRenting: the lead
// turns on the rule that accepts succeeded runs, a run succeeds and one
// fails ($40), the admin enters the pool's $20 network cost for the month
// and a rental price of $3 per GPU-hour; the team page then carries the
// network share and says what the accepted run cost here vs $30.00 rented.
func TestAdminEntersSharedCostsAndTheTeamPageComparesWithRenting(t *testing.T) {
	team, portal, db := acceptedTeam(t)
	ctx := context.Background()

	lead := NewBrowser(t, portal)
	lead.LoginAs("bob")
	lead.Open("/teams/" + team)
	assert.Contains(t, lead.TestIDText("acceptance-rule"), "accepted when a person accepts them")
	lead.Submit(testID("rule-on"))
	assert.Contains(t, lead.TestIDText("acceptance-rule"), "Succeeded runs are accepted automatically")
	assert.Contains(t, lead.TestIDText("acceptance-rule"), "set by bob")

	ns := "team-" + team
	ended := time.Now().UTC()
	for _, r := range []struct {
		job, outcome, usd string
		hours             float64
	}{{"train-good", cost.OutcomeSucceeded, "32", 8}, {"train-oom", cost.OutcomeFailed, "8", 2}} {
		usd, err := money.Parse(r.usd)
		require.NoError(t, err)
		_, err = db.RecordRun(ctx, store.LedgerRow{RunKey: r.job + "@1", WorkloadUID: r.job, Team: team, Namespace: ns, JobName: r.job,
			JobKind: "Job", Flavor: statusH100, Resource: "nvidia.com/gpu", GPUs: 8, CreatedAt: ended.Add(-2 * time.Hour),
			AdmittedAt: ended.Add(-time.Hour), EndedAt: ended, Outcome: r.outcome, AllocatedGPUHours: r.hours,
			USDPerHour: 4 * money.Dollar, CostUSD: usd})
		require.NoError(t, err)
	}

	admin := NewBrowser(t, portal)
	admin.LoginAs("erin")
	admin.Open("/admin/cluster")
	admin.Submit(testID("shared-costs-link"))
	admin.do("choose the H100 pool", chromedp.SetValue(testID("shared-pool"), statusH100))
	admin.Fill("#shared-network", "20")
	admin.Submit(testID("shared-save"))
	assert.Contains(t, admin.Text(`[data-testid="shared-`+statusH100+`"]`), "$20.00")
	admin.Fill("#comparison-label", "rented H100s")
	admin.Fill("#comparison-rental", "3")
	admin.Submit(testID("comparison-save"))
	assert.Contains(t, admin.TestIDText("comparison-in-effect"), "rented H100s, $3.00 per GPU-hour rented")

	lead.Open("/teams/" + team)
	// The team's share of the $20 is its part of the pool's GPU-hours this
	// month: the portal's ledger also records other tests' runs in the pool.
	network, err := money.Parse(lead.TestIDText("term-network"))
	require.NoError(t, err)
	assert.True(t, network > 0 && network <= 20*money.Dollar, "network share %s of $20.00", network)
	total := 40*money.Dollar + network
	assert.Equal(t, total.String(), lead.TestIDText("term-total"), "$40 of runs and the network share")
	assert.Contains(t, lead.TestIDText("per-accepted-run"), total.String()+" per accepted run (1 accepted, 1 of them by the team's rule")
	assert.Equal(t, "This month an accepted run cost "+total.String()+" here vs $30.00 rented: renting would have been cheaper.",
		lead.TestIDText("cost-verdict"), "10 GPU-hours at $3")
	for _, b := range []*Browser{lead, admin} {
		assert.Empty(t, b.ConsoleErrors())
	}
}
