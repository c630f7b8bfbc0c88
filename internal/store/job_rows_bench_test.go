package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gantry-dev/gantry/internal/money"
)

// BenchmarkReadJobTogether is a job page's read of its job's rows: one
// batch of four statements, one round trip ("read"); or, with every job's
// rows kept (KeepJobRows), none ("kept").
func BenchmarkReadJobTogether(b *testing.B) {
	s, dsn := newStoreAt(b)
	ctx := context.Background()
	const ns, job = "team-vision", "pytorch-train-abcdefgh12"
	view := func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.JobRuns(s.ReadJobTogether(ctx, ns, job), ns, job); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("read", view)
	changes := NewChanges(dsn, quietLog())
	keeper := s.KeepJobRows(changes, quietLog())
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { changes.Run(runCtx); close(done) }()
	b.Cleanup(func() { cancel(); <-done })
	require.Eventually(b, func() bool { _, live := changes.Listening(); return live }, 10*time.Second, 10*time.Millisecond, "listening")
	require.NoError(b, keeper.Load(ctx))
	if _, err := s.JobRuns(s.ReadJobTogether(ctx, ns, job), ns, job); err != nil { // kept from this view on
		b.Fatal(err)
	}
	b.Run("kept", view)
}

// BenchmarkLedgerMonth reads a team's month of 3,400 ended runs (a third of
// the 10,000-run ledger of issue 17) as the pages' figures do: whole, and
// row by row as they are summed.
func BenchmarkLedgerMonth(b *testing.B) {
	s := newStore(b)
	ctx := context.Background()
	t0 := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	util := 40.0
	rows := make([]LedgerRow, 0, 3400)
	for i := range cap(rows) {
		ended := t0.Add(time.Duration(i) * 10 * time.Minute)
		rows = append(rows, LedgerRow{RunKey: fmt.Sprintf("bench-run-%05d", i), WorkloadUID: fmt.Sprintf("bench-uid-%05d", i), Team: "vision",
			Namespace: "team-vision", JobName: fmt.Sprintf("pytorch-train-%08d", i), JobKind: "Job", Owner: "user-07", Flavor: "h100",
			Resource: "nvidia.com/gpu", GPUs: 8, CreatedAt: ended.Add(-3 * time.Hour), AdmittedAt: ended.Add(-2 * time.Hour), EndedAt: ended,
			Outcome: "succeeded", WaitSeconds: 3600, AllocatedGPUHours: 16, AvgUtilization: &util, MeasuredGPUHours: &util, UsefulGPUHours: &util,
			USDPerHour: 4 * money.Dollar, CostUSD: 64 * money.Dollar, RecordedAt: ended})
	}
	require.NoError(b, s.db.WithContext(ctx).CreateInBatches(rows, 500).Error)
	from, to := t0, t0.AddDate(0, 1, 0)
	b.Run("whole", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			got, err := s.LedgerRows(ctx, "vision", from, to)
			require.NoError(b, err)
			require.Len(b, got, len(rows))
		}
	})
	b.Run("row-by-row", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			n := 0
			require.NoError(b, s.EachLedgerRow(ctx, "vision", from, to, Recorded{}, func(LedgerRow) error { n++; return nil }))
			require.Equal(b, len(rows), n)
		}
	})
}
