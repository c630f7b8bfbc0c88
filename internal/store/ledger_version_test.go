package store

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/gantry-dev/gantry/internal/money"
)

func TestLedgerVersionChangesWithEveryWrite(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	v0, err := s.LedgerVersion(ctx)
	require.NoError(t, err)

	now := time.Now().UTC().Truncate(time.Second)
	row := LedgerRow{RunKey: "run-1", WorkloadUID: "uid-1", Team: "vision", Namespace: "team-vision", JobName: "train", JobKind: "Job",
		Flavor: "h100", Resource: "nvidia.com/gpu", GPUs: 8, CreatedAt: now.Add(-2 * time.Hour), AdmittedAt: now.Add(-time.Hour), EndedAt: now,
		Outcome: "succeeded", AllocatedGPUHours: 8, USDPerHour: 4 * money.Dollar, CostUSD: 32 * money.Dollar}
	inserted, err := s.RecordRun(ctx, row)
	require.NoError(t, err)
	require.True(t, inserted)
	v1, err := s.LedgerVersion(ctx)
	require.NoError(t, err)
	assert.Greater(t, v1, v0, "a new run changes the version")

	_, err = s.RecordRun(ctx, row)
	require.NoError(t, err)
	v2, err := s.LedgerVersion(ctx)
	require.NoError(t, err)
	v3, err := s.LedgerVersion(ctx)
	require.NoError(t, err)
	assert.Equal(t, v2, v3, "reading does not change it")

	require.NoError(t, s.db.WithContext(ctx).Exec("UPDATE cost_ledger SET reason = 'fixed by hand' WHERE run_key = 'run-1'").Error)
	v4, err := s.LedgerVersion(ctx)
	require.NoError(t, err)
	assert.Greater(t, v4, v3, "a change by any writer, even by hand, changes it")
}

// TestLedgerMarkNamesTheRowsRecordedSince: figures summed at one mark add
// the rows recorded since (ledger rows, accounted runs, pool hours), each
// once however many replicas record at once; a change that is not a new
// row says they must be summed again.
func TestLedgerMarkNamesTheRowsRecordedSince(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	t0 := time.Date(2026, 11, 2, 8, 0, 0, 0, time.UTC)
	row := func(i int) LedgerRow {
		return LedgerRow{RunKey: fmt.Sprintf("run-%03d", i), WorkloadUID: fmt.Sprintf("uid-%d", i), Team: "vision", Namespace: "team-vision",
			JobName: fmt.Sprintf("train-%d", i), JobKind: "Job", Flavor: "h100", Resource: "nvidia.com/gpu", GPUs: 1,
			CreatedAt: t0, AdmittedAt: t0, EndedAt: t0.Add(time.Duration(i) * time.Minute), Outcome: "succeeded", AllocatedGPUHours: 1}
	}
	for i := range 3 {
		_, err := s.RecordRun(ctx, row(i))
		require.NoError(t, err)
	}
	m1, err := s.LedgerMark(ctx)
	require.NoError(t, err)
	v, err := s.LedgerVersion(ctx)
	require.NoError(t, err)
	assert.Equal(t, v, m1.Version)

	// Forty runs recorded by eight writers at once, some twice.
	var g errgroup.Group
	for w := range 8 {
		g.Go(func() error {
			for i := 3 + w; i < 43; i += 4 {
				if _, err := s.RecordRun(ctx, row(i)); err != nil {
					return err
				}
			}
			return nil
		})
	}
	require.NoError(t, g.Wait())
	m2, err := s.LedgerMark(ctx)
	require.NoError(t, err)
	rec, ok := m1.Since(m2)
	require.True(t, ok, "new rows are added to what was summed")

	var keys []string
	require.NoError(t, s.EachLedgerRow(ctx, "vision", t0, t0.Add(24*time.Hour), rec, func(r LedgerRow) error {
		assert.Greater(t, r.Seq, m1.Version)
		assert.LessOrEqual(t, r.Seq, m2.Version)
		keys = append(keys, r.RunKey)
		return nil
	}))
	assert.Len(t, keys, 40, "the rows recorded since, each once")
	assert.NotContains(t, keys, "run-000")
	runs, err := s.RecordedAccountedRuns(ctx, "vision", t0, t0.Add(24*time.Hour), rec)
	require.NoError(t, err)
	assert.Len(t, runs, 40)
	pools, err := s.RecordedPoolHours(ctx, t0.AddDate(0, 0, -1), t0.AddDate(0, 1, 0), rec)
	require.NoError(t, err)
	require.Len(t, pools, 1)
	assert.InDelta(t, 40, pools[0].GPUHours, 1e-9, "the pool hours the new rows add")
	all, err := s.RecordedPoolHours(ctx, t0.AddDate(0, 0, -1), t0.AddDate(0, 1, 0), m2.Rows())
	require.NoError(t, err)
	assert.InDelta(t, 43, all[0].GPUHours, 1e-9, "every row up to the mark")

	same, ok := m2.Since(m2)
	require.True(t, ok)
	n := 0
	require.NoError(t, s.EachLedgerRow(ctx, "", t0, t0.Add(24*time.Hour), same, func(LedgerRow) error { n++; return nil }))
	assert.Zero(t, n, "nothing was recorded since the same mark")
	assert.True(t, same.Empty())
	assert.False(t, rec.Empty())

	require.NoError(t, s.db.WithContext(ctx).Exec("DELETE FROM cost_ledger WHERE run_key = 'run-001'").Error)
	m3, err := s.LedgerMark(ctx)
	require.NoError(t, err)
	assert.Greater(t, m3.Version, m2.Version)
	_, ok = m2.Since(m3)
	assert.False(t, ok, "after a delete the figures are summed again")
	_, ok = m3.Since(m2)
	assert.False(t, ok, "a mark ahead of now is no base")
}
