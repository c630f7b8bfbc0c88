package cost_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gantry-dev/gantry/internal/audit"
	"github.com/gantry-dev/gantry/internal/cost"
	"github.com/gantry-dev/gantry/internal/devcluster/storetest"
)

// BenchmarkTeamCostAfterARunEnds is a run ending and the team's cost
// section read after it, over the 50,000-workload run's ledger: 50,000
// ended runs of three teams this month, each launched through the portal
// (16,700 for the team). whole reads the team's months with their launches
// and every pool's hours again, as each change did before KeptRuns; kept
// adds the run recorded since.
func BenchmarkTeamCostAfterARunEnds(b *testing.B) {
	ctx := context.Background()
	db, _ := storetest.Open(b)
	now := time.Now().UTC()
	month := cost.MonthStart(now)
	storetest.SeedLedger(b, db, month, now, 50_000)
	n := 0
	for _, kept := range []bool{false, true} {
		name := "whole"
		acc := &cost.Accounting{Store: db, Audit: audit.New(db, nil)}
		if kept {
			name, acc.KeptRuns = "kept", &cost.KeptRuns{Store: db}
		}
		b.Run(name, func(b *testing.B) {
			_, err := acc.Team(ctx, "vision", month, cost.TrendMonths)
			require.NoError(b, err)
			b.ReportAllocs()
			for b.Loop() {
				n++
				storetest.RecordEndedRun(b, db, "vision", fmt.Sprintf("ended-%d", n))
				got, err := acc.Team(ctx, "vision", month, cost.TrendMonths)
				require.NoError(b, err)
				require.NotZero(b, got.Month.AllocatedGPUHours)
			}
		})
	}
}
