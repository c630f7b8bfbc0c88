package cost_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gantry-dev/gantry/internal/audit"
	"github.com/gantry-dev/gantry/internal/cost"
	"github.com/gantry-dev/gantry/internal/devcluster/stacktest"
	"github.com/gantry-dev/gantry/internal/money"
	"github.com/gantry-dev/gantry/internal/problem"
	"github.com/gantry-dev/gantry/internal/store"
)

// endpointsServed is the endpoint proxy's count, as its store would answer.
type endpointsServed []cost.EndpointUsage

func (e endpointsServed) EndpointUsage(context.Context, string, time.Time, time.Time) ([]cost.EndpointUsage, error) {
	return e, nil
}

// migratedStore opens a store on a fresh, migrated database.
func migratedStore(t testing.TB) *store.Store {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, stacktest.Postgres(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	require.NoError(t, store.Migrate(ctx, db.SQL(), slog.New(slog.DiscardHandler)))
	return db
}

func dollars(t *testing.T, s string) money.USD {
	t.Helper()
	v, err := money.Parse(s)
	require.NoError(t, err)
	return v
}

// TestCostPerAcceptedUnitFromAKnownLedger writes a small ledger, verdicts,
// a team rule, shared costs and a comparison to Postgres and checks every
// figure of the team's month against the arithmetic done by hand.
func TestCostPerAcceptedUnitFromAKnownLedger(t *testing.T) {
	ctx := context.Background()
	db := migratedStore(t)

	nov := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	day := func(d int) time.Time { return nov.AddDate(0, 0, d-1).Add(12 * time.Hour) }
	const pool = "h100-sxm-ib-training"
	n := 0
	run := func(team, job, outcome, cause string, ended time.Time, hours, measured, useful float64, usd string) {
		n++
		r := store.LedgerRow{RunKey: job + "@" + ended.Format(time.RFC3339), WorkloadUID: job, Team: team, Namespace: "team-" + team,
			JobName: job, JobKind: "Job", Flavor: pool, Resource: "nvidia.com/gpu", GPUs: 8, CreatedAt: ended.Add(-2 * time.Hour),
			AdmittedAt: ended.Add(-time.Hour), EndedAt: ended, Outcome: outcome, Cause: cause, AllocatedGPUHours: hours,
			USDPerHour: 4 * money.Dollar, CostUSD: dollars(t, usd)}
		if measured > 0 {
			r.MeasuredGPUHours, r.UsefulGPUHours = &measured, &useful
		}
		inserted, err := db.RecordRun(ctx, r)
		require.NoError(t, err)
		require.True(t, inserted)
	}
	launched := func(team, job, kind, owner string) {
		_, err := db.RecordLaunch(ctx, store.Launch{LaunchID: job, Team: team, Namespace: "team-" + team, Name: job, Kind: kind,
			Template: kind, TemplateVersion: 1, Owner: owner, Parameters: []byte(`{}`), CreatedAt: nov})
		require.NoError(t, err)
	}
	// vision, November: 20 of the pool's 40 GPU-hours.
	run("vision", "train-a", cost.OutcomeSucceeded, "", day(3), 10, 10, 6, "40")        // useful 6 h $24, idle 4 h $16
	run("vision", "train-b", cost.OutcomeFailed, "out-of-memory", day(4), 2, 2, 2, "8") // failed $8
	run("vision", "train-c", cost.OutcomeSucceeded, "", day(5), 4, 2, 2, "16")          // useful $8, unmeasured 2 h $8
	run("vision", "serve", cost.OutcomeStopped, "", day(6), 4, 4, 1, "16")              // endpoint: useful $4, idle 3 h $12
	run("nlp", "nlp-train", cost.OutcomeSucceeded, "", day(7), 20, 20, 20, "80")
	// vision, October.
	run("vision", "old", cost.OutcomeSucceeded, "", nov.AddDate(0, 0, -10), 1, 1, 1, "4")
	launched("vision", "train-a", "training", "alice")
	launched("vision", "train-b", "training", "alice")
	launched("vision", "train-c", "training", "carol")
	launched("vision", "serve", cost.KindInference, "bob")

	clock := nov.AddDate(0, 0, 20)
	acc := &cost.Accounting{Store: db, Audit: audit.New(db, nil), Now: func() time.Time { return clock },
		Endpoints: endpointsServed{{Namespace: "team-vision", Endpoint: "serve", Requests: 12_000, Tokens: 3_000_000}}}
	bob := cost.Actor{Username: "bob", Via: "browser"}
	erin := cost.Actor{Username: "erin", Via: "browser"}
	_, err := acc.Decide(ctx, bob, "vision", "team-vision", "train-a", store.VerdictAccepted, "good checkpoint")
	require.NoError(t, err)
	_, err = acc.Decide(ctx, bob, "vision", "team-vision", "train-b", store.VerdictRejected, "")
	require.NoError(t, err)
	_, err = acc.Decide(ctx, bob, "vision", "team-vision", "old", store.VerdictAccepted, "")
	require.NoError(t, err)
	_, err = acc.Decide(ctx, bob, "vision", "team-vision", "train-a", "maybe", "")
	var invalid problem.Fields
	require.ErrorAs(t, err, &invalid, "only accepted or rejected")
	// The rule accepts train-c (succeeded, no verdict) but not the rejected train-b.
	_, _, err = db.SetAcceptanceRule(ctx, "vision", true, "bob", nov)
	require.NoError(t, err)
	_, err = acc.SetSharedCost(ctx, erin, cost.SharedCostInput{Month: "2026-11", Pool: pool,
		NetworkUSD: "100", StorageUSD: "60", SupportUSD: "20", OperationsUSD: "20"})
	require.NoError(t, err)
	_, err = acc.SetComparison(ctx, erin, cost.ComparisonInput{Month: "2026-10", Label: "rented H100s",
		RentalUSDPerGPUHour: "7", APIUSDPerMillionTokens: "15"})
	require.NoError(t, err)

	got, err := acc.Team(ctx, "vision", nov, 2)
	require.NoError(t, err)
	m := got.Month
	// Shared: half of the pool's $200 ($50 network, $30 storage, $10
	// support, $10 operations); the endpoint had 4 of vision's 20 hours there: $20.
	for name, c := range map[string]struct {
		got  money.USD
		want string
	}{
		"useful": {m.UsefulUSD, "36"}, "idle": {m.IdleUSD, "28"}, "unmeasured": {m.UnmeasuredUSD, "8"}, "failed": {m.FailedUSD, "8"},
		"network": {m.NetworkUSD, "50"}, "storage": {m.StorageUSD, "30"}, "support": {m.SupportUSD, "10"}, "operations": {m.OperationsUSD, "10"},
		"total": {m.TotalUSD, "180"}, "runs": {m.RunsCostUSD, "144"}, "endpoints": {m.EndpointCostUSD, "36"},
	} {
		assert.Equal(t, dollars(t, c.want).Decimal(), c.got.Decimal(), name)
	}
	assert.Equal(t, 2, m.AcceptedRuns, "train-a by bob, train-c by the rule")
	assert.Equal(t, 1, m.AcceptedByRule)
	assert.Equal(t, 1, m.RejectedRuns)
	require.NotNil(t, m.CostPerAcceptedRunUSD)
	assert.Equal(t, "$72.00", m.CostPerAcceptedRunUSD.String(), "$144 / 2 accepted runs")
	assert.Equal(t, cost.UnitMillionTokens, m.EndpointUnit)
	require.NotNil(t, m.CostPerEndpointUnitUSD)
	assert.Equal(t, "$12.00", m.CostPerEndpointUnitUSD.String(), "$36 / 3 million tokens")
	require.NotNil(t, m.RentedPerAcceptedRunUSD)
	assert.Equal(t, "$56.00", m.RentedPerAcceptedRunUSD.String(), "16 GPU-hours × $7 / 2")
	assert.Equal(t, "This month an accepted run cost $72.00 here vs $56.00 rented: renting would have been cheaper. "+
		"A million tokens served cost $12.00 here vs $15.00 from the model API: the cluster is cheaper.", m.Verdict)

	require.Len(t, got.Trend, 2)
	oct := got.Trend[0]
	assert.Equal(t, "2026-10", oct.Month)
	assert.Equal(t, 1, oct.AcceptedRuns, "old, accepted, ended in October")
	assert.Equal(t, "$4.00", oct.CostPerAcceptedRunUSD.String())

	idle := got.Idle
	assert.InDelta(t, 7, idle.IdleGPUHours, 1e-9)
	assert.Equal(t, "$28.00", idle.IdleUSD.String())
	assert.Equal(t, []cost.IdleShare{{Name: "train-a", GPUHours: 4, USD: 16 * money.Dollar}, {Name: "serve", GPUHours: 3, USD: 12 * money.Dollar}}, idle.ByJob)
	assert.Equal(t, []cost.IdleShare{{Name: "alice", GPUHours: 4, USD: 16 * money.Dollar}, {Name: "bob", GPUHours: 3, USD: 12 * money.Dollar}}, idle.ByOwner)
	assert.Equal(t, []cost.IdleShare{{Name: "training", GPUHours: 4, USD: 16 * money.Dollar}, {Name: "inference", GPUHours: 3, USD: 12 * money.Dollar}}, idle.ByKind)
	assert.Equal(t, []cost.CauseCost{{Cause: "out-of-memory", Runs: 1, USD: 8 * money.Dollar}}, idle.FailedByCause)

	// Every change is in the audit log, by whom.
	entries, err := db.AuditEntries(ctx, store.AuditFilter{})
	require.NoError(t, err)
	actions := map[string]int{}
	for _, e := range entries {
		actions[e.Action+" by "+e.Actor]++
	}
	assert.Equal(t, 3, actions[cost.ActionVerdict+" by bob"])
	assert.Equal(t, 1, actions[cost.ActionSharedCost+" by erin"])
	assert.Equal(t, 1, actions[cost.ActionComparison+" by erin"])
}

// TestLedgerMoneySumsAreExactInPostgres sums 10,000 ledger rows of $0.10
// and $0.20 read back from Postgres: exactly $1,500.00.
func TestLedgerMoneySumsAreExactInPostgres(t *testing.T) {
	ctx := context.Background()
	db := migratedStore(t)
	at := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	_, err := db.SQL().ExecContext(ctx, `INSERT INTO cost_ledger (run_key, workload_uid, team, namespace, job_name, job_kind, flavor, resource,
			gpus, created_at, admitted_at, ended_at, outcome, wait_seconds, allocated_gpu_hours, usd_per_hour, cost_usd)
		SELECT 'r' || i, 'u' || i, 'vision', 'team-vision', 'job-' || i, 'Job', 'h100', 'nvidia.com/gpu', 1, $1::timestamptz, $1::timestamptz, $1::timestamptz + i * interval '1 second',
			'failed', 0, 1, 0.1, CASE WHEN i % 2 = 0 THEN 0.1 ELSE 0.2 END
		FROM generate_series(0, 9999) AS i`, at)
	require.NoError(t, err)
	runs, err := db.AccountedRuns(ctx, "vision", at, at.Add(24*time.Hour))
	require.NoError(t, err)
	require.Len(t, runs, 10_000)
	u := cost.Account(cost.MonthInput{Team: "vision", Month: at, Runs: runs})
	assert.Equal(t, "1500.000000", u.TotalUSD.Decimal())
	assert.Equal(t, "$1500.00", u.FailedUSD.String())
}

// TestEndpointUnitsAndReclaimsAreReadFromTheirTables counts what the
// endpoint proxy recorded per hour and what idle reclaim stopped, through
// the adapters the portal wires.
func TestEndpointUnitsAndReclaimsAreReadFromTheirTables(t *testing.T) {
	ctx := context.Background()
	db := migratedStore(t)
	nov := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	require.NoError(t, db.AddEndpointUsage(ctx, []store.EndpointUsageHour{
		{Team: "vision", Name: "chat", Hour: nov.Add(5 * time.Hour), Requests: 700, PromptTokens: 400_000, CompletionTokens: 100_000},
		{Team: "vision", Name: "chat", Hour: nov.Add(6 * time.Hour), Requests: 300, PromptTokens: 1_000_000, CompletionTokens: 500_000},
		{Team: "vision", Name: "embed", Hour: nov.Add(6 * time.Hour), Requests: 2_000},
		{Team: "vision", Name: "chat", Hour: nov.AddDate(0, 1, 0), Requests: 99_999}, // December
		{Team: "nlp", Name: "chat", Hour: nov.Add(6 * time.Hour), Requests: 5},
	}))
	usage, err := cost.StoreEndpointUsage{Hours: db}.EndpointUsage(ctx, "vision", nov, cost.NextMonth(nov))
	require.NoError(t, err)
	assert.Equal(t, []cost.EndpointUsage{{Endpoint: "chat", Requests: 1_000, Tokens: 2_000_000}, {Endpoint: "embed", Requests: 2_000}}, usage)
	u := cost.Account(cost.MonthInput{Team: "vision", Month: nov, Endpoints: usage,
		Runs: []store.AccountedRun{{Kind: cost.KindInference, LedgerRow: store.LedgerRow{Team: "vision", Flavor: "h100", AllocatedGPUHours: 2,
			Outcome: cost.OutcomeStopped, CostUSD: 10 * money.Dollar, EndedAt: nov.Add(7 * time.Hour)}}}})
	assert.Equal(t, cost.UnitMillionTokens, u.EndpointUnit, "responses reported tokens")
	assert.Equal(t, "$5.00", u.CostPerEndpointUnitUSD.String(), "$10 for 2 million tokens")

	acted := nov.Add(10 * time.Hour)
	for _, e := range []store.IdleEpisode{
		{LaunchID: "l1", Namespace: "team-vision", Name: "nb", Team: "vision", Kind: "notebook", Owner: "alice", IdleSince: nov,
			Action: "stopped", ActedAt: &acted, GPUsFreed: 1, IdleGPUHours: 1.5, IdleCostUSD: 6 * money.Dollar},
		{LaunchID: "l2", Namespace: "team-vision", Name: "train", Team: "vision", Kind: "training", Owner: "alice", IdleSince: nov,
			Action: "flagged", ActedAt: &acted, IdleGPUHours: 9},
		{LaunchID: "l3", Namespace: "team-nlp", Name: "nb", Team: "nlp", Kind: "notebook", Owner: "carol", IdleSince: nov,
			Action: "stopped", ActedAt: &acted, GPUsFreed: 2, IdleGPUHours: 3},
	} {
		opened, err := db.OpenIdleEpisode(ctx, store.IdleEpisode{LaunchID: e.LaunchID, Namespace: e.Namespace, Name: e.Name, Team: e.Team,
			Kind: e.Kind, Owner: e.Owner, IdleSince: e.IdleSince}, nil, nil)
		require.NoError(t, err)
		e.ID = opened.ID
		done, err := db.ActOnIdleEpisode(ctx, e, e.Action == "stopped", nil, nil)
		require.NoError(t, err)
		require.True(t, done)
	}
	reclaims, err := cost.StoreReclaims{Episodes: db}.Reclaims(ctx, "vision", nov, cost.NextMonth(nov))
	require.NoError(t, err)
	assert.Equal(t, []cost.Reclaim{{Job: "nb", Action: "stopped", GPUsFreed: 1, GPUHours: 1.5, USD: 6 * money.Dollar}}, reclaims,
		"a flagged training job is not reclaimed; other teams' reclaims are theirs")
}

// causeOf is a cause source that names one cause.
type causeOf string

func (c causeOf) RunCause(context.Context, cost.Run) string { return string(c) }

func TestLedgerRowKeepsTheCauseOfAFailedRunOnly(t *testing.T) {
	l := &cost.Ledger{Causes: causeOf("out-of-memory"), Log: slog.New(slog.DiscardHandler)}
	for outcome, want := range map[string]string{cost.OutcomeFailed: "out-of-memory", cost.OutcomeEvicted: "out-of-memory",
		cost.OutcomeSucceeded: "", cost.OutcomeStopped: ""} {
		row, err := l.Row(context.Background(), cost.Run{Namespace: "team-vision", JobName: "train", Outcome: outcome})
		require.NoError(t, err)
		assert.Equal(t, want, row.Cause, outcome)
	}
}

// TestWeeklyHoursFromAKnownLedger writes runs of two teams to Postgres and
// checks the cluster chart's weeks against the arithmetic done by hand: a
// failed or evicted run's hours are failed, a measured run's useful and
// idle hours are its measured ones split by use, a run measured only by its
// mean utilization counts all its hours, an unmeasured one counts none, and
// runs before the first week or after the last are left out.
func TestWeeklyHoursFromAKnownLedger(t *testing.T) {
	ctx := context.Background()
	db := migratedStore(t)

	now := time.Date(2026, 11, 25, 15, 0, 0, 0, time.UTC) // a Wednesday
	thisWeek := cost.WeekStart(now)
	lastWeek := thisWeek.AddDate(0, 0, -7)
	n := 0
	run := func(team, outcome string, ended time.Time, hours float64, measured, useful, util *float64) {
		n++
		_, err := db.RecordRun(ctx, store.LedgerRow{RunKey: fmt.Sprintf("run-%d", n), WorkloadUID: "uid", Team: team, Namespace: "team-" + team,
			JobName: fmt.Sprintf("job-%d", n), JobKind: "Job", Flavor: "h100", Resource: "nvidia.com/gpu", GPUs: 1, CreatedAt: ended.Add(-time.Hour),
			AdmittedAt: ended.Add(-time.Hour), EndedAt: ended, Outcome: outcome, AllocatedGPUHours: hours,
			MeasuredGPUHours: measured, UsefulGPUHours: useful, AvgUtilization: util})
		require.NoError(t, err)
	}
	f := func(v float64) *float64 { return &v }
	run("vision", "succeeded", lastWeek.Add(time.Hour), 10, f(8), f(6), nil)     // useful 6, idle 2
	run("vision", "failed", lastWeek.Add(2*time.Hour), 4, f(4), f(1), nil)       // failed 4
	run("vision", "evicted", thisWeek.Add(time.Hour), 3, nil, nil, nil)          // failed 3
	run("vision", "succeeded", thisWeek.Add(2*time.Hour), 5, nil, nil, f(40))    // useful 2, idle 3
	run("vision", "succeeded", thisWeek.Add(3*time.Hour), 7, nil, nil, nil)      // not measured
	run("nlp", "succeeded", thisWeek.Add(time.Hour), 2, f(2), f(2), nil)         // useful 2
	run("nlp", "succeeded", lastWeek.Add(-time.Hour), 100, f(100), f(100), nil)  // the week before the chart
	run("nlp", "succeeded", thisWeek.AddDate(0, 0, 7), 100, f(100), f(100), nil) // next week

	acc := &cost.Accounting{Store: db, Audit: audit.New(db, nil), Now: func() time.Time { return now }}
	weeks, err := acc.Weeks(ctx, 2)
	require.NoError(t, err)
	assert.Equal(t, []cost.TeamWeeks{
		{Team: "nlp", Weeks: []cost.WeekHours{{Week: lastWeek}, {Week: thisWeek, Useful: 2}}},
		{Team: "vision", Weeks: []cost.WeekHours{{Week: lastWeek, Useful: 6, Idle: 2, Failed: 4}, {Week: thisWeek, Useful: 2, Idle: 3, Failed: 3}}},
	}, weeks)
}
