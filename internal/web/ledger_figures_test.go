package web

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gantry-dev/gantry/internal/cost"
	"github.com/gantry-dev/gantry/internal/devcluster/storetest"
	"github.com/gantry-dev/gantry/internal/money"
	"github.com/gantry-dev/gantry/internal/store"
)

// seqLedger is a ledger whose rows carry the version their insert made,
// as the database's do, and which notes the spans of versions read.
type seqLedger struct {
	CostStore
	mu    sync.Mutex
	rows  []store.LedgerRow
	mark  store.LedgerMark
	spans []store.Recorded
}

func (l *seqLedger) record(r store.LedgerRow) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mark.Version++
	r.Seq = l.mark.Version
	l.rows = append(l.rows, r)
}

// rewrite changes a row as an update by hand would.
func (l *seqLedger) rewrite(i int, f func(*store.LedgerRow)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mark.Version++
	l.mark.Rewrites++
	f(&l.rows[i])
}

func (l *seqLedger) LedgerVersion(context.Context) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mark.Version, nil
}

func (l *seqLedger) LedgerMark(context.Context) (store.LedgerMark, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mark, nil
}

func (l *seqLedger) EachLedgerRow(_ context.Context, team string, from, to time.Time, rec store.Recorded, fn func(store.LedgerRow) error) error {
	l.mu.Lock()
	l.spans = append(l.spans, rec)
	var out []store.LedgerRow
	for _, r := range l.rows {
		if (team == "" || r.Team == team) && !r.EndedAt.Before(from) && r.EndedAt.Before(to) && rec.Lets(r.Seq) {
			out = append(out, r)
		}
	}
	l.mu.Unlock()
	for _, r := range out {
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

func (l *seqLedger) lastSpan() store.Recorded {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.spans[len(l.spans)-1]
}

// TestLedgerFiguresAddTheRunsRecordedSince: after runs end, the team and
// cluster pages' month and typical waits are what reading the month whole
// gives, though only the runs recorded since were read; the week slides
// without a read; a rewrite of the ledger and a new month read it whole.
func TestLedgerFiguresAddTheRunsRecordedSince(t *testing.T) {
	ledger := &seqLedger{}
	now := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	deps := Deps{Now: clock, Log: slog.New(slog.DiscardHandler), Status: &StatusDeps{Costs: ledger}}
	kept := &handler{Deps: deps, ledgerFigures: newLedgerFiguresCache()}
	whole := &handler{Deps: deps}
	n := 0
	run := func(team, flavor, outcome string, ended time.Time, wait time.Duration) {
		n++
		hours := float64(n % 5)
		useful := hours / 2
		ledger.record(store.LedgerRow{RunKey: fmt.Sprintf("run-%d", n), Team: team, Namespace: "team-" + team,
			JobName: fmt.Sprintf("job-%d", n%7), Flavor: flavor, GPUs: 1, AdmittedAt: ended.Add(-time.Hour), EndedAt: ended,
			Outcome: outcome, WaitSeconds: wait.Seconds(), AllocatedGPUHours: hours, MeasuredGPUHours: &hours, UsefulGPUHours: &useful,
			USDPerHour: 2 * money.Dollar, CostUSD: money.USD(n) * money.Dollar})
	}
	for i := range 40 {
		run([]string{"vision", "nlp"}[i%2], []string{"h100", "a100"}[i%3%2], []string{"succeeded", "failed"}[i%4%2],
			now.Add(-time.Duration(i)*9*time.Hour), time.Duration(i%9)*time.Minute)
	}
	same := func(what string) {
		t.Helper()
		for _, team := range []string{"", "vision", "nlp"} {
			want, err := whole.ledgerFiguresOf(t.Context(), team, now)
			require.NoError(t, err)
			got, err := kept.ledgerFiguresOf(t.Context(), team, now)
			require.NoError(t, err)
			assert.Equal(t, want.month, got.month, "%s: team %q's month", what, team)
			assert.Equal(t, want.weekP50, got.weekP50, "%s: team %q's typical waits", what, team)
		}
	}
	same("read whole")
	before := ledger.mark

	// Runs end: now, and a while ago (recorded late).
	now = now.Add(10 * time.Second)
	run("vision", "h100", "succeeded", now, 20*time.Minute)
	run("nlp", "a100", "failed", now.Add(-50*time.Hour), time.Hour)
	run("vision", "a100", "succeeded", now.Add(-time.Hour), 3*time.Hour)
	same("runs recorded since")
	ledger.mu.Lock()
	spans := ledger.spans[len(ledger.spans)-6:]
	ledger.mu.Unlock()
	for i := 1; i < len(spans); i += 2 { // whole, kept, whole, kept, ...
		assert.Equal(t, before.Version, spans[i].After, "the kept figures read only the runs recorded since")
		assert.Equal(t, ledger.mark.Version, spans[i].UpTo)
	}

	// Six days on, one more run: the oldest waits leave the week.
	now = now.Add(6 * 24 * time.Hour)
	run("nlp", "h100", "succeeded", now, 5*time.Minute)
	same("the week slid")

	ledger.rewrite(3, func(r *store.LedgerRow) { r.WaitSeconds, r.CostUSD = 7200, 99*money.Dollar })
	same("a run changed by hand")
	assert.Equal(t, int64(-1), ledger.lastSpan().After, "after a rewrite the month is read whole")

	now = time.Date(2026, 12, 1, 0, 30, 0, 0, time.UTC)
	run("vision", "h100", "succeeded", now.Add(-time.Minute), time.Minute)
	same("a new month")
	assert.Equal(t, int64(-1), ledger.lastSpan().After, "a new month is read whole")
}

// BenchmarkLedgerFiguresAfterARunEnds is a run ending and the team page's
// and the cluster page's ledger figures (the month's report and the week's
// waits) read after it, over the 50,000-workload run's ledger (50,000
// ended runs of three teams this month). whole reads the month again, as
// each change did before the figures were added to; kept adds the run
// recorded since.
func BenchmarkLedgerFiguresAfterARunEnds(b *testing.B) {
	db, _ := storetest.Open(b)
	now := time.Now().UTC()
	storetest.SeedLedger(b, db, cost.MonthStart(now), now, 50_000)
	n := 0
	for _, kept := range []bool{false, true} {
		h := &handler{Deps: Deps{Now: time.Now, Log: slog.New(slog.DiscardHandler), Status: &StatusDeps{Costs: db}}}
		name := "whole"
		if kept {
			name, h.ledgerFigures = "kept", newLedgerFiguresCache()
		}
		for _, team := range []string{"vision", ""} {
			b.Run(fmt.Sprintf("%s/team=%s", name, cmp.Or(team, "all")), func(b *testing.B) {
				_, err := h.ledgerFiguresOf(b.Context(), team, time.Now())
				require.NoError(b, err)
				b.ReportAllocs()
				for b.Loop() {
					n++
					storetest.RecordEndedRun(b, db, "vision", fmt.Sprintf("ended-%d", n))
					f, err := h.ledgerFiguresOf(b.Context(), team, time.Now())
					require.NoError(b, err)
					require.NotZero(b, f.month.Runs)
				}
			})
		}
	}
}
