package cost_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gantry-dev/gantry/internal/audit"
	"github.com/gantry-dev/gantry/internal/cost"
	"github.com/gantry-dev/gantry/internal/money"
	"github.com/gantry-dev/gantry/internal/store"
)

// recordedReads is the store, noting the spans of versions its team runs
// were read over.
type recordedReads struct {
	*store.Store
	mu        sync.Mutex
	spans     []store.Recorded
	weekSpans []store.Recorded
}

func (r *recordedReads) RecordedAccountedRuns(ctx context.Context, team string, from, to time.Time, rec store.Recorded) ([]store.AccountedRun, error) {
	r.mu.Lock()
	r.spans = append(r.spans, rec)
	r.mu.Unlock()
	return r.Store.RecordedAccountedRuns(ctx, team, from, to, rec)
}

func (r *recordedReads) RecordedRunHours(ctx context.Context, from, to time.Time, rec store.Recorded) ([]store.RunHours, error) {
	r.mu.Lock()
	r.weekSpans = append(r.weekSpans, rec)
	r.mu.Unlock()
	return r.Store.RecordedRunHours(ctx, from, to, rec)
}

func (r *recordedReads) last() store.Recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.spans[len(r.spans)-1]
}

// TestKeptRunsAddTheRunsRecordedSince: a team's cost section after runs
// end is what reading its months whole gives, though only the runs
// recorded since were read (with their launches, in every pool's hours);
// a rewrite of the ledger and a new span read them whole again.
func TestKeptRunsAddTheRunsRecordedSince(t *testing.T) {
	ctx := context.Background()
	db := migratedStore(t)
	nov := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	clock := nov.AddDate(0, 0, 20)
	n := 0
	run := func(team, outcome string, ended time.Time, hours float64) {
		t.Helper()
		n++
		job := fmt.Sprintf("%s-job-%d", team, n)
		_, err := db.RecordLaunch(ctx, store.Launch{LaunchID: job, Team: team, Namespace: "team-" + team, Name: job,
			Kind: []string{"training", cost.KindInference}[n%2], Template: "t", TemplateVersion: 1, Owner: fmt.Sprintf("user-%d", n%3),
			Parameters: []byte(`{}`), CreatedAt: ended.Add(-3 * time.Hour)})
		require.NoError(t, err)
		useful := hours / 2
		_, err = db.RecordRun(ctx, store.LedgerRow{RunKey: job + "/1", WorkloadUID: job, Team: team, Namespace: "team-" + team,
			JobName: job, JobKind: "Job", Flavor: []string{"h100", "a100"}[n%2], Resource: "nvidia.com/gpu", GPUs: 8,
			CreatedAt: ended.Add(-2 * time.Hour), AdmittedAt: ended.Add(-time.Hour), EndedAt: ended, Outcome: outcome,
			AllocatedGPUHours: hours, MeasuredGPUHours: &hours, UsefulGPUHours: &useful, USDPerHour: 4 * money.Dollar,
			CostUSD: money.FromFloat(4 * hours)})
		require.NoError(t, err)
	}
	for i := range 12 {
		run([]string{"vision", "nlp"}[i%2], []string{cost.OutcomeSucceeded, cost.OutcomeFailed, cost.OutcomeEvicted}[i%3],
			nov.AddDate(0, -i%3, 1+i), float64(1+i))
	}
	reads := &recordedReads{Store: db}
	kept := &cost.Accounting{Store: db, Audit: audit.New(db, nil), Now: func() time.Time { return clock },
		KeptRuns: &cost.KeptRuns{Store: reads}}
	whole := &cost.Accounting{Store: db, Audit: audit.New(db, nil), Now: func() time.Time { return clock }}
	same := func(what string) {
		t.Helper()
		want, err := whole.Team(ctx, "vision", nov, cost.TrendMonths)
		require.NoError(t, err)
		got, err := kept.Team(ctx, "vision", nov, cost.TrendMonths)
		require.NoError(t, err)
		assert.Equal(t, want, got, what)
		wantWeeks, err := whole.Weeks(ctx, 8)
		require.NoError(t, err)
		gotWeeks, err := kept.Weeks(ctx, 8)
		require.NoError(t, err)
		assert.NotEmpty(t, gotWeeks)
		assert.Equal(t, wantWeeks, gotWeeks, "%s: the cluster's weekly chart", what)
	}
	same("the first read is whole")
	first, err := db.LedgerMark(ctx)
	require.NoError(t, err)

	for i := range 6 {
		run([]string{"vision", "nlp"}[i%2], cost.OutcomeSucceeded, nov.AddDate(0, -i%2, 2+i), 3)
	}
	same("runs recorded since, in this month and earlier ones, of this team and another (the pool's hours)")
	rec := reads.last()
	assert.Equal(t, first.Version, rec.After, "only the runs recorded since were read")
	assert.Equal(t, first.Version, reads.weekSpans[len(reads.weekSpans)-1].After, "for the weekly chart too")

	before, weeksBefore := len(reads.spans), len(reads.weekSpans)
	same("nothing recorded since")
	assert.Len(t, reads.spans, before, "nothing was read again")
	assert.Len(t, reads.weekSpans, weeksBefore)

	_, err = db.SQL().ExecContext(ctx, "UPDATE cost_ledger SET outcome = $1 WHERE job_name = $2", cost.OutcomeFailed, "vision-job-1")
	require.NoError(t, err)
	same("a run changed by hand")
	assert.Equal(t, int64(-1), reads.last().After, "after a rewrite the months are read whole")

	_, err = kept.Team(ctx, "vision", nov.AddDate(0, -1, 0), cost.TrendMonths)
	require.NoError(t, err)
	assert.Equal(t, int64(-1), reads.last().After, "another span of months is read whole")
}
