package store

import (
	"errors"
	"fmt"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gantry-dev/gantry/internal/money"
)

// TestEachLedgerRowHandsOverWhatLedgerRowsReturns: the pages' figures sum
// the ledger as it is read; they must see the same runs, whole and in the
// same order, as a read of the rows at once, and stop when told.
func TestEachLedgerRowHandsOverWhatLedgerRowsReturns(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	t0 := time.Date(2026, 11, 2, 8, 0, 0, 0, time.UTC)
	util := 62.5
	for i := range 12 {
		team := []string{"vision", "nlp"}[i%2]
		ended := t0.Add(time.Duration(i/3) * time.Hour) // three runs end at each hour
		row := LedgerRow{RunKey: fmt.Sprintf("run-%02d", 11-i), WorkloadUID: fmt.Sprintf("uid-%d", i), Team: team, Namespace: "team-" + team,
			JobName: fmt.Sprintf("train-%d", i), JobKind: "Job", Owner: "ana", Flavor: "h100", Resource: "nvidia.com/gpu", GPUs: 8,
			CreatedAt: ended.Add(-3 * time.Hour), AdmittedAt: ended.Add(-2 * time.Hour), EndedAt: ended, Outcome: "failed", Reason: "OOMKilled",
			Cause: "out-of-memory", WaitSeconds: 3600, AllocatedGPUHours: 16, USDPerHour: 4 * money.Dollar, CostUSD: 64 * money.Dollar}
		if i%3 == 0 {
			row.AvgUtilization, row.MeasuredGPUHours, row.UsefulGPUHours = &util, new(float64), new(float64)
			*row.MeasuredGPUHours, *row.UsefulGPUHours = 12, 7.5
		}
		inserted, err := s.RecordRun(ctx, row)
		require.NoError(t, err)
		require.True(t, inserted)
	}
	for _, team := range []string{"", "vision", "nlp"} {
		from, to := t0.Add(time.Hour), t0.Add(3*time.Hour)
		want, err := s.LedgerRows(ctx, team, from, to)
		require.NoError(t, err)
		require.NotEmpty(t, want)
		var got []LedgerRow
		require.NoError(t, s.EachLedgerRow(ctx, team, from, to, Recorded{}, func(r LedgerRow) error {
			got = append(got, r)
			return nil
		}))
		assert.Equal(t, want, got, "team %q: the same rows in the same order", team)
	}

	stop := errors.New("enough")
	seen := 0
	err := s.EachLedgerRow(ctx, "", t0, t0.Add(24*time.Hour), Recorded{}, func(LedgerRow) error {
		seen++
		if seen == 4 {
			return stop
		}
		return nil
	})
	assert.ErrorIs(t, err, stop, "fn's error is returned")
	assert.Equal(t, 4, seen, "no row is handed over after fn's error")
}

// TestLedgerReadsShareTheNamesRunsRepeat: figures kept over a month of the
// ledger keep what they read of each run for as long as they live; the
// team, namespace, kind, owner, flavor, resource, outcome, reason and cause
// that a team's runs repeat are one copy each, not one per row scanned.
func TestLedgerReadsShareTheNamesRunsRepeat(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	t0 := time.Date(2026, 11, 2, 8, 0, 0, 0, time.UTC)
	for i := range 3 {
		_, err := s.RecordRun(ctx, LedgerRow{RunKey: fmt.Sprintf("run-%d", i), WorkloadUID: fmt.Sprintf("uid-%d", i), Team: "vision",
			Namespace: "team-vision", JobName: fmt.Sprintf("train-%d", i), JobKind: "training", Owner: "ana", Flavor: "h100",
			Resource: "nvidia.com/gpu", GPUs: 1, CreatedAt: t0, AdmittedAt: t0, EndedAt: t0.Add(time.Duration(i+1) * time.Minute),
			Outcome: "failed", Reason: "OOMKilled", Cause: "out-of-memory", AllocatedGPUHours: 1})
		require.NoError(t, err)
	}
	names := func(r LedgerRow) []string {
		return []string{r.Team, r.Namespace, r.JobKind, r.Owner, r.Flavor, r.Resource, r.Outcome, r.Reason, r.Cause}
	}
	shared := func(t *testing.T, rows [][]string) {
		t.Helper()
		require.Len(t, rows, 3)
		for i, name := range rows[0] {
			for _, other := range rows[1:] {
				assert.Equal(t, name, other[i])
				assert.Same(t, unsafe.StringData(name), unsafe.StringData(other[i]), "%q is one copy", name)
			}
		}
	}
	from, to := t0, t0.Add(time.Hour)
	var each [][]string
	require.NoError(t, s.EachLedgerRow(ctx, "vision", from, to, Recorded{}, func(r LedgerRow) error {
		each = append(each, names(r))
		return nil
	}))
	shared(t, each)

	runs, err := s.AccountedRuns(ctx, "vision", from, to)
	require.NoError(t, err)
	var accounted [][]string
	for _, r := range runs {
		accounted = append(accounted, names(r.LedgerRow))
	}
	shared(t, accounted)
}
