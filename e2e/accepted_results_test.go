package e2e

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gantry-dev/gantry/internal/cost"
	"github.com/gantry-dev/gantry/internal/devcluster/stacktest"
	"github.com/gantry-dev/gantry/internal/money"
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
	require.NoError(t, db.UpsertTeams(ctx, []store.Team{{Name: team.Name, DisplayName: "Accepted results test team",
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
