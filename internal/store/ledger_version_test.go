package store

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
