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
	month cost.Report
	// waits are by flavor: a team's week is thousands of runs, and a
	// flavor's name once per run was most of what the figures held.
	waits   map[string][]admittedWait
	weekP50 map[string]float64
}

// admittedWait is one run's wait before admission, in seconds, and when it
// was admitted (Unix nanoseconds).
type admittedWait struct {
	admitted int64
	wait     float64
}

// ledgerFiguresCache keeps ledgerFigures per team ("" for every team) until
// the ledger changes (store.LedgerVersion, one row read per page), the
// month turns, or a minute has passed (the week's window slides): thousands
// of ended runs are read and summed once per change instead of once per
// page view. The team is the family: views that come while its new figures
// load get its last ones.
type ledgerFiguresCache = sharedFigures[ledgerFigures]

func newLedgerFiguresCache() *ledgerFiguresCache { return &ledgerFiguresCache{} }

// ledgerFiguresOf returns the team's ledger figures at now; team "" sums
// every team. Without a cache (tests), they are read every time.
func (h *handler) ledgerFiguresOf(ctx context.Context, team string, now time.Time) (ledgerFigures, error) {
	return h.cachedLedgerFigures(ctx, team, now, false)
}

// ledgerWaitsOf is ledgerFiguresOf for the job page's typical wait, a
// week's median, which may be one ledger change behind: no view waits for
// the team's week to be read again (sharedFigures.getOrLast). The team and
// cluster pages' cost figures show a change on the next view.
func (h *handler) ledgerWaitsOf(ctx context.Context, team string, now time.Time) (ledgerFigures, error) {
	return h.cachedLedgerFigures(ctx, team, now, true)
}

func (h *handler) cachedLedgerFigures(ctx context.Context, team string, now time.Time, behind bool) (ledgerFigures, error) {
	c := h.ledgerFigures
	if c == nil {
		return h.readLedgerFigures(ctx, team, now)
	}
	version, err := h.Status.Costs.LedgerVersion(ctx)
	if err != nil {
		return ledgerFigures{}, err
	}
	// The key changes with the ledger and the month. The week's window
	// slides with the ttl instead: figures a minute old are answered at
	// once while one load slides them in the background, so no view waits
	// for the re-read at a minute's turn (at 10,000 runs a week, 0.3-0.5 s
	// for the view that used to start it, and a pile-up behind it).
	key := fmt.Sprintf("%s|%d|%s", team, version, cost.MonthStart(now).Format(time.RFC3339))
	load := func(ctx context.Context) (ledgerFigures, error) { return h.readLedgerFigures(ctx, team, now) }
	if behind {
		return c.getOrLast(ctx, team, key, time.Minute, load)
	}
	return c.get(ctx, team, key, time.Minute, load)
}

func (h *handler) readLedgerFigures(ctx context.Context, team string, now time.Time) (ledgerFigures, error) {
	monthStart := cost.MonthStart(now)
	weekAgo := now.Add(-7 * 24 * time.Hour)
	from := monthStart
	if weekAgo.Before(from) {
		from = weekAgo
	}
	// Summed as the rows are read: a team's month is thousands of rows,
	// read again each time the ledger changes.
	f := ledgerFigures{waits: map[string][]admittedWait{}}
	month := cost.NewSummary(monthStart, now, topJobs)
	err := h.Status.Costs.EachLedgerRow(ctx, team, from, now.Add(time.Second), func(r store.LedgerRow) error {
		if !r.EndedAt.Before(monthStart) {
			month.Add(r)
		}
		if !r.AdmittedAt.Before(weekAgo) {
			f.waits[r.Flavor] = append(f.waits[r.Flavor], admittedWait{r.AdmittedAt.UnixNano(), r.WaitSeconds})
		}
		return nil
	})
	if err != nil {
		return ledgerFigures{}, err
	}
	f.month = month.Report()
	f.weekP50 = make(map[string]float64, len(f.waits))
	for flavor, ws := range f.waits {
		secs := make([]float64, len(ws))
		for i, w := range ws {
			secs[i] = w.wait
		}
		f.weekP50[flavor] = percentile(secs, 0.5)
	}
	return f, nil
}
