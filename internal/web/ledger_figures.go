package web

import (
	"context"
	"fmt"
	"slices"
	"sync"
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
	// sum is what month reports, summed up to the ledger's mark for the
	// month starting monthStart: the figures of a later version add the
	// rows recorded since to a copy of it. Never changed once kept.
	sum        *cost.Summary
	mark       store.LedgerMark
	monthStart time.Time
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
//
// A change is read as the rows recorded since the team's newest figures
// (store.LedgerMark), added to a copy of them: each ended run is a change,
// and in the 50,000-workload run, where evictions ended runs every few
// seconds, the first team or cluster page view after each waited up to
// 2.4 s for the month to be read again. A new month, or a rewrite of the
// ledger (an update or delete, by hand), reads it whole.
type ledgerFiguresCache struct {
	shared sharedFigures[ledgerFigures]
	mu     sync.Mutex
	newest map[string]ledgerFigures
}

func newLedgerFiguresCache() *ledgerFiguresCache {
	return &ledgerFiguresCache{newest: map[string]ledgerFigures{}}
}

// base returns the team's newest figures.
func (c *ledgerFiguresCache) base(team string) (ledgerFigures, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f, ok := c.newest[team]
	return f, ok
}

// keep makes f the team's newest figures unless newer ones are kept.
func (c *ledgerFiguresCache) keep(team string, f ledgerFigures) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old, ok := c.newest[team]
	if !ok || !old.monthStart.Equal(f.monthStart) || f.mark.Replaces(old.mark) {
		c.newest[team] = f
	}
}

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
		return h.readLedgerFigures(ctx, team, now, ledgerFigures{}, false)
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
	load := func(ctx context.Context) (ledgerFigures, error) {
		base, found := c.base(team)
		f, err := h.readLedgerFigures(ctx, team, now, base, found)
		if err != nil {
			return ledgerFigures{}, err
		}
		c.keep(team, f)
		return f, nil
	}
	if behind {
		return c.shared.getOrLast(ctx, team, key, time.Minute, load)
	}
	return c.shared.get(ctx, team, key, time.Minute, load)
}

// readLedgerFigures sums the team's figures at now: the rows recorded since
// base added to a copy of it when base is of the same month and the ledger
// was only added to since, else the month and week read whole.
func (h *handler) readLedgerFigures(ctx context.Context, team string, now time.Time, base ledgerFigures, found bool) (ledgerFigures, error) {
	monthStart := cost.MonthStart(now)
	monthEnd := cost.NextMonth(monthStart)
	weekAgo := now.Add(-7 * 24 * time.Hour)
	from := monthStart
	if weekAgo.Before(from) {
		from = weekAgo
	}
	mark, err := h.Status.Costs.LedgerMark(ctx)
	if err != nil {
		return ledgerFigures{}, err
	}
	f := ledgerFigures{waits: map[string][]admittedWait{}, mark: mark, monthStart: monthStart}
	rec, add := base.mark.Since(mark)
	if add = add && found && base.monthStart.Equal(monthStart); add {
		f.sum = base.sum.Clone(now)
		// The week's window slides: waits admitted before it drop out.
		for flavor, ws := range base.waits {
			kept := slices.DeleteFunc(slices.Clone(ws), func(w admittedWait) bool { return w.admitted < weekAgo.UnixNano() })
			if len(kept) > 0 {
				f.waits[flavor] = kept
			}
		}
	} else {
		rec = mark.Rows()
		f.sum = cost.NewSummary(monthStart, now, topJobs)
	}
	// Summed as the rows are read: a team's month is thousands of rows.
	// The runs that end after now (a clock a little ahead on the replica
	// that recorded them) count too: they will not be read again.
	if !rec.Empty() {
		err = h.Status.Costs.EachLedgerRow(ctx, team, from, monthEnd, rec, func(r store.LedgerRow) error {
			if !r.EndedAt.Before(monthStart) {
				f.sum.Add(r)
			}
			if !r.AdmittedAt.Before(weekAgo) {
				f.waits[r.Flavor] = append(f.waits[r.Flavor], admittedWait{r.AdmittedAt.UnixNano(), r.WaitSeconds})
			}
			return nil
		})
		if err != nil {
			return ledgerFigures{}, err
		}
	}
	f.month = f.sum.Report()
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
