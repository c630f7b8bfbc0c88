package cost

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/gantry-dev/gantry/internal/store"
)

// RecordedRunsStore reads the ledger's runs recorded in a span of its
// versions (store.Recorded) and the mark that bounds them.
type RecordedRunsStore interface {
	LedgerMark(ctx context.Context) (store.LedgerMark, error)
	RecordedAccountedRuns(ctx context.Context, team string, from, to time.Time, rec store.Recorded) ([]store.AccountedRun, error)
	RecordedPoolHours(ctx context.Context, from, to time.Time, rec store.Recorded) ([]store.PoolMonthHours, error)
	RecordedRunHours(ctx context.Context, from, to time.Time, rec store.Recorded) ([]store.RunHours, error)
}

// KeptRuns keeps what a team's accounting reads of the ledger (the team's
// runs of the trend's months with their launches, every team's hours per
// pool and month), and the cluster's weekly chart, at the ledger mark it
// was read at, and adds the runs recorded since instead of reading the
// months again: each ended run is a new ledger version, and in the
// 50,000-workload run, where evictions ended runs every few seconds, the
// first team page view after each waited up to 4.1 s for the team's six
// months to be read with their launches. A rewrite of the ledger (an
// update or delete, by hand) reads them whole.
type KeptRuns struct {
	Store RecordedRunsStore

	mu    sync.Mutex
	teams map[teamSpan]keptSum[runList]
	pools map[[2]time.Time]keptSum[[]store.PoolMonthHours]
	weeks map[weekSpan]keptSum[map[string][]WeekHours]
}

type teamSpan struct {
	team     string
	from, to time.Time
}

type weekSpan struct {
	first time.Time
	weeks int
}

// keptSum is what was read or summed of the ledger up to mark; never
// changed once kept.
type keptSum[V any] struct {
	mark  store.LedgerMark
	value V
	used  time.Time
}

// keptRunsIdle is how long what was kept outlives its last use: a team
// nobody looks at does not hold its months.
const keptRunsIdle = 10 * time.Minute

// keptRead returns what key's figures are at mark: kept ones, the rows
// recorded since added to them (add), or, when there are none to add to
// or a rewrite came between, read whole. The newest are kept; mu guards
// kept, and what was not used for keptRunsIdle is dropped.
func keptRead[K comparable, V any](mu *sync.Mutex, kept *map[K]keptSum[V], key K, mark store.LedgerMark,
	read func(store.Recorded) (V, error), add func(base, more V) V) (V, error) {
	mu.Lock()
	base, found := (*kept)[key]
	mu.Unlock()
	rec, since := base.mark.Since(mark)
	since = since && found
	value := base.value
	if !since || !rec.Empty() {
		if !since {
			rec = mark.Rows()
		}
		more, err := read(rec)
		if err != nil {
			var zero V
			return zero, err
		}
		value = more
		if since {
			value = add(base.value, more)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	now := time.Now()
	if *kept == nil {
		*kept = map[K]keptSum[V]{}
	}
	for k, e := range *kept {
		if now.Sub(e.used) > keptRunsIdle {
			delete(*kept, k)
		}
	}
	if old, ok := (*kept)[key]; !ok || mark.Replaces(old.mark) {
		(*kept)[key] = keptSum[V]{mark: mark, value: value, used: now}
	}
	return value, nil
}

// Read returns the team's runs that ended in [from, to) and every team's
// pool hours by month over it, as store.AccountedRuns and store.PoolHours
// do. Callers must not change what it returns.
func (k *KeptRuns) Read(ctx context.Context, team string, from, to time.Time) ([]store.AccountedRun, []store.PoolMonthHours, error) {
	mark, err := k.Store.LedgerMark(ctx)
	if err != nil {
		return nil, nil, err
	}
	var (
		g     errgroup.Group
		runs  []store.AccountedRun
		hours []store.PoolMonthHours
	)
	g.Go(func() error {
		list, err := keptRead(&k.mu, &k.teams, teamSpan{team, from, to}, mark, func(rec store.Recorded) (runList, error) {
			runs, err := k.Store.RecordedAccountedRuns(ctx, team, from, to, rec)
			if err != nil {
				return runList{}, fmt.Errorf("runs of %s recorded since version %d: %w", team, rec.After, err)
			}
			return runList{runs: runs, extended: new(atomic.Bool)}, nil
		}, addRuns)
		runs = list.runs
		return err
	})
	g.Go(func() (err error) {
		hours, err = keptRead(&k.mu, &k.pools, [2]time.Time{from, to}, mark, func(rec store.Recorded) ([]store.PoolMonthHours, error) {
			hours, err := k.Store.RecordedPoolHours(ctx, from, to, rec)
			if err != nil {
				return nil, fmt.Errorf("pool hours recorded since version %d: %w", rec.After, err)
			}
			return hours, nil
		}, addPoolHours)
		return err
	})
	if err := g.Wait(); err != nil {
		return nil, nil, err
	}
	return runs, hours, nil
}

// Weekly is Weekly over every team's runs that ended in the weeks from
// first: the runs recorded since the chart was last summed are added to a
// copy of it. Callers must not change what it returns.
func (k *KeptRuns) Weekly(ctx context.Context, first time.Time, weeks int) (map[string][]WeekHours, error) {
	mark, err := k.Store.LedgerMark(ctx)
	if err != nil {
		return nil, err
	}
	return keptRead(&k.mu, &k.weeks, weekSpan{first, weeks}, mark, func(rec store.Recorded) (map[string][]WeekHours, error) {
		runs, err := k.Store.RecordedRunHours(ctx, first, first.AddDate(0, 0, 7*weeks), rec)
		if err != nil {
			return nil, fmt.Errorf("hours recorded since version %d: %w", rec.After, err)
		}
		return Weekly(runs, first, weeks), nil
	}, addWeeks)
}

// runList is a team's runs, oldest first (ended, then run key) as the
// store orders them, in an array a later list may extend in place: runs
// end in order, so the runs recorded since usually go after the last, and
// copying a team's month (16,700 runs of 440 bytes at 50,000 workloads)
// at each ended run was most of what adding one cost.
type runList struct {
	runs []store.AccountedRun
	// extended is set once a longer list uses the array past len(runs);
	// then no other may, and a second list from this one copies.
	extended *atomic.Bool
}

func runBefore(x, y store.AccountedRun) int {
	return cmp.Or(x.EndedAt.Compare(y.EndedAt), cmp.Compare(x.RunKey, y.RunKey))
}

// addRuns merges the runs recorded since into base's, in order.
func addRuns(base, more runList) runList {
	if len(more.runs) == 0 {
		return base
	}
	n := len(base.runs)
	inOrder := n == 0 || runBefore(base.runs[n-1], more.runs[0]) < 0
	if inOrder && cap(base.runs)-n >= len(more.runs) && base.extended.CompareAndSwap(false, true) {
		return runList{runs: append(base.runs, more.runs...), extended: new(atomic.Bool)}
	}
	runs := make([]store.AccountedRun, 0, n+len(more.runs)+n/8+64)
	runs = append(append(runs, base.runs...), more.runs...)
	if !inOrder {
		slices.SortStableFunc(runs, runBefore)
	}
	return runList{runs: runs, extended: new(atomic.Bool)}
}

// addPoolHours sums two lists of pool hours by month and pool, ordered as
// the store orders them.
func addPoolHours(a, b []store.PoolMonthHours) []store.PoolMonthHours {
	type monthPool struct {
		month  time.Time
		flavor string
	}
	sums := map[monthPool]float64{}
	for _, h := range slices.Concat(a, b) {
		sums[monthPool{h.Month, h.Flavor}] += h.GPUHours
	}
	out := make([]store.PoolMonthHours, 0, len(sums))
	for k, v := range sums {
		out = append(out, store.PoolMonthHours{Month: k.month, Flavor: k.flavor, GPUHours: v})
	}
	slices.SortFunc(out, func(x, y store.PoolMonthHours) int {
		return cmp.Or(x.Month.Compare(y.Month), cmp.Compare(x.Flavor, y.Flavor))
	})
	return out
}

// addWeeks sums two teams' weekly hours over the same weeks into new ones.
func addWeeks(a, b map[string][]WeekHours) map[string][]WeekHours {
	out := make(map[string][]WeekHours, len(a)+len(b))
	for team, ws := range a {
		out[team] = slices.Clone(ws)
	}
	for team, ws := range b {
		sum, ok := out[team]
		if !ok {
			out[team] = ws
			continue
		}
		for i := range sum {
			sum[i].Useful += ws[i].Useful
			sum[i].Idle += ws[i].Idle
			sum[i].Failed += ws[i].Failed
		}
	}
	return out
}
