package web

import (
	"context"
	"fmt"
	"time"

	"github.com/gantry-dev/gantry/internal/cost"
	"github.com/gantry-dev/gantry/internal/store"
)

// ledgerFigures are what the team, cluster and job pages derive from the
// ledger's ended runs: the month's report (without its rows), the waits of
// the runs admitted in the last week and their median by flavor.
type ledgerFigures struct {
	month   cost.Report
	waits   []waitSample
	weekP50 map[string]float64
}

// waitSample is one run's wait before admission, by flavor.
type waitSample struct {
	flavor   string
	admitted time.Time
	wait     float64
}

// ledgerFiguresCache keeps ledgerFigures per team ("" for every team) until
// the ledger changes (store.LedgerVersion, one row read per page) or the
// minute turns (the week's window slides): thousands of ended runs are read
// and summed once per change instead of once per page view. The team is
// the family: views that come while its new figures load get its last ones.
type ledgerFiguresCache = sharedFigures[ledgerFigures]

func newLedgerFiguresCache() *ledgerFiguresCache { return &ledgerFiguresCache{} }

// ledgerFiguresOf returns the team's ledger figures at now; team "" sums
// every team. Without a cache (tests), they are read every time.
func (h *handler) ledgerFiguresOf(ctx context.Context, team string, now time.Time) (ledgerFigures, error) {
	c := h.ledgerFigures
	if c == nil {
		return h.readLedgerFigures(ctx, team, now)
	}
	version, err := h.Status.Costs.LedgerVersion(ctx)
	if err != nil {
		return ledgerFigures{}, err
	}
	key := fmt.Sprintf("%s|%d|%s", team, version, now.UTC().Truncate(time.Minute).Format(time.RFC3339))
	// The key changes with the ledger and the minute; the ttl only drops
	// figures nobody asks for any more.
	return c.get(ctx, team, key, time.Minute, func(ctx context.Context) (ledgerFigures, error) {
		return h.readLedgerFigures(ctx, team, now)
	})
}

func (h *handler) readLedgerFigures(ctx context.Context, team string, now time.Time) (ledgerFigures, error) {
	monthStart := cost.MonthStart(now)
	weekAgo := now.Add(-7 * 24 * time.Hour)
	from := monthStart
	if weekAgo.Before(from) {
		from = weekAgo
	}
	rows, err := h.Status.Costs.LedgerRows(ctx, team, from, now.Add(time.Second))
	if err != nil {
		return ledgerFigures{}, err
	}
	var f ledgerFigures
	month := make([]store.LedgerRow, 0, len(rows))
	for _, r := range rows {
		if !r.EndedAt.Before(monthStart) {
			month = append(month, r)
		}
		if !r.AdmittedAt.Before(weekAgo) {
			f.waits = append(f.waits, waitSample{r.Flavor, r.AdmittedAt, r.WaitSeconds})
		}
	}
	f.month = cost.Summarize(month, monthStart, now, topJobs)
	f.month.Ledger = nil
	byFlavor := map[string][]float64{}
	for _, w := range f.waits {
		byFlavor[w.flavor] = append(byFlavor[w.flavor], w.wait)
	}
	f.weekP50 = make(map[string]float64, len(byFlavor))
	for flavor, ws := range byFlavor {
		f.weekP50[flavor] = percentile(ws, 0.5)
	}
	return f, nil
}
