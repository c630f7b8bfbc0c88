package web

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/gantry-dev/gantry/internal/cost"
	"github.com/gantry-dev/gantry/internal/gpu"
	"github.com/gantry-dev/gantry/internal/store"
)

// scrapeInterval is how often Prometheus scrapes the DCGM exporters: a
// figure read from it is no fresher than this, so pages share one query
// per key for this long.
const scrapeInterval = 15 * time.Second

// maxCachedFigures bounds each page cache; past it, expired entries are
// dropped, and if none are, everything is.
const maxCachedFigures = 4096

// sharedFigures keeps figures by key until they expire, and makes
// concurrent misses of one key wait for one load. Errors are not kept.
// Expiry runs on the wall clock, not the handler's (tests freeze that).
//
// Figures up to one more ttl past their expiry are answered at once while
// one load refreshes them in the background (stale-while-revalidate): under
// steady views nobody waits for a reload, and figures are never older than
// ttl plus one load. After a quiet spell longer than that, the view waits
// for fresh figures as on a miss. Callers put what the figures derive from
// (a ledger version, a change count) in the key, so a change is a miss,
// never answered stale.
type sharedFigures[V any] struct {
	group singleflight.Group
	mu    sync.Mutex
	byKey map[string]sharedEntry[V]
}

type sharedEntry[V any] struct {
	value   V
	expires time.Time
	// ttl is how long the value was fresh for, and how long past that
	// it may be answered while a reload runs.
	ttl time.Duration
}

// lookup returns key's figures if they are fresh, or stale within the
// grace period (stale is then true).
func (s *sharedFigures[V]) lookup(key string) (v V, ok, stale bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, found := s.byKey[key]
	now := time.Now()
	if !found || !now.Before(e.expires.Add(e.ttl)) {
		return v, false, false
	}
	return e.value, true, !now.Before(e.expires)
}

// get returns key's figures, loading them when they are missing or expired.
// The load runs without the request's cancellation: others may wait on it.
func (s *sharedFigures[V]) get(ctx context.Context, key string, ttl time.Duration, load func(context.Context) (V, error)) (V, error) {
	reload := func() (any, error) {
		if v, ok, stale := s.lookup(key); ok && !stale {
			return v, nil
		}
		v, err := load(context.WithoutCancel(ctx))
		if err != nil {
			return v, err
		}
		s.keep(key, v, ttl)
		return v, nil
	}
	if v, ok, stale := s.lookup(key); ok {
		if stale {
			// Answered from the buffered channel nobody reads; an error
			// leaves the stale figures until their grace ends.
			s.group.DoChan(key, reload)
		}
		return v, nil
	}
	v, err, _ := s.group.Do(key, reload)
	if err != nil {
		var zero V
		return zero, err
	}
	return v.(V), nil
}

func (s *sharedFigures[V]) keep(key string, v V, ttl time.Duration) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byKey == nil {
		s.byKey = map[string]sharedEntry[V]{}
	}
	if len(s.byKey) >= maxCachedFigures {
		for k, e := range s.byKey {
			if !now.Before(e.expires.Add(e.ttl)) {
				delete(s.byKey, k)
			}
		}
		if len(s.byKey) >= maxCachedFigures {
			clear(s.byKey)
		}
	}
	s.byKey[key] = sharedEntry[V]{value: v, expires: now.Add(ttl), ttl: ttl}
}

// sharedGPUMetrics answers the cluster and job pages' Prometheus queries
// once per scrape interval per key, however many people look: a figure up
// to 15 s old is what the next scrape would have changed anyway.
type sharedGPUMetrics struct {
	next     GPUMetrics
	nodes    sharedFigures[map[string]float64]
	usage    sharedFigures[gpu.Usage]
	measured sharedFigures[gpu.Measured]
}

func newSharedGPUMetrics(next GPUMetrics) *sharedGPUMetrics {
	return &sharedGPUMetrics{next: next}
}

// endKey names the end of a queried range: "now" for an end within a
// scrape interval of the present (a running job, the cluster now), so
// views a few seconds apart share a query; else the instant itself.
func endKey(end time.Time) string {
	if d := time.Since(end); d > -scrapeInterval && d < scrapeInterval {
		return "now"
	}
	return end.UTC().Format(time.RFC3339Nano)
}

// NodeUtilization is shared by every caller; they must not change the map.
func (g *sharedGPUMetrics) NodeUtilization(ctx context.Context, at time.Time) (map[string]float64, error) {
	return g.nodes.get(ctx, endKey(at), scrapeInterval, func(ctx context.Context) (map[string]float64, error) {
		return g.next.NodeUtilization(ctx, at)
	})
}

func (g *sharedGPUMetrics) JobUsage(ctx context.Context, namespace, job string, start, end time.Time) (gpu.Usage, error) {
	key := fmt.Sprintf("%s/%s|%s|%s", namespace, job, start.UTC().Format(time.RFC3339Nano), endKey(end))
	return g.usage.get(ctx, key, scrapeInterval, func(ctx context.Context) (gpu.Usage, error) {
		return g.next.JobUsage(ctx, namespace, job, start, end)
	})
}

func (g *sharedGPUMetrics) MeasuredUse(ctx context.Context, namespace, job string, start, end time.Time) (gpu.Measured, error) {
	key := fmt.Sprintf("%s/%s|%s|%s", namespace, job, start.UTC().Format(time.RFC3339Nano), endKey(end))
	return g.measured.get(ctx, key, scrapeInterval, func(ctx context.Context) (gpu.Measured, error) {
		return g.next.MeasuredUse(ctx, namespace, job, start, end)
	})
}

// teamAccountingTTL bounds how stale a team's cost per accepted unit may
// be on a replica that did not make the change (a verdict, a rule, a shared
// cost, a comparison entered on another replica); on the replica that made
// it, and after any ledger change, the next view reads it afresh.
const teamAccountingTTL = 5 * time.Second

// sharedAccounting answers the cluster page's weekly chart, the team
// page's cost section and the job page's result once per ledger version (store.LedgerVersion, one
// row read per view), change made through it, and minute (the current week
// grows) or teamAccountingTTL, however many people look; the rest of the
// service is passed on.
type sharedAccounting struct {
	AccountingService
	ledgerVersion func(context.Context) (int64, error)
	// changes counts the writes made through this replica's service.
	changes atomic.Int64
	weeks   sharedFigures[[]cost.TeamWeeks]
	teams   sharedFigures[cost.TeamAccounting]
	results sharedFigures[cost.JobResult]
}

func newSharedAccounting(next AccountingService, ledgerVersion func(context.Context) (int64, error)) *sharedAccounting {
	return &sharedAccounting{AccountingService: next, ledgerVersion: ledgerVersion}
}

// state names what the figures derive from: the ledger and this replica's changes.
func (a *sharedAccounting) state(ctx context.Context) (string, error) {
	version, err := a.ledgerVersion(ctx)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d|%d", version, a.changes.Load()), nil
}

// Weeks is shared by every caller; they must not change what it returns.
func (a *sharedAccounting) Weeks(ctx context.Context, weeks int) ([]cost.TeamWeeks, error) {
	state, err := a.state(ctx)
	if err != nil {
		return nil, err
	}
	key := fmt.Sprintf("%d|%s|%s", weeks, state, time.Now().UTC().Truncate(time.Minute).Format(time.RFC3339))
	return a.weeks.get(ctx, key, time.Minute, func(ctx context.Context) ([]cost.TeamWeeks, error) {
		return a.AccountingService.Weeks(ctx, weeks)
	})
}

// Team is shared by every caller; they must not change what it returns.
func (a *sharedAccounting) Team(ctx context.Context, team string, month time.Time, trend int) (cost.TeamAccounting, error) {
	state, err := a.state(ctx)
	if err != nil {
		return cost.TeamAccounting{}, err
	}
	key := fmt.Sprintf("%s|%s|%d|%s", team, month.UTC().Format("2006-01"), trend, state)
	return a.teams.get(ctx, key, teamAccountingTTL, func(ctx context.Context) (cost.TeamAccounting, error) {
		return a.AccountingService.Team(ctx, team, month, trend)
	})
}

// JobResult is shared by every caller; they must not change what it returns.
func (a *sharedAccounting) JobResult(ctx context.Context, team, namespace, job, kind string) (cost.JobResult, error) {
	state, err := a.state(ctx)
	if err != nil {
		return cost.JobResult{}, err
	}
	key := fmt.Sprintf("%s|%s/%s|%s|%s", team, namespace, job, kind, state)
	return a.results.get(ctx, key, teamAccountingTTL, func(ctx context.Context) (cost.JobResult, error) {
		return a.AccountingService.JobResult(ctx, team, namespace, job, kind)
	})
}

func (a *sharedAccounting) Decide(ctx context.Context, by cost.Actor, team, namespace, job, verdict, note string) (store.RunVerdict, error) {
	defer a.changes.Add(1)
	return a.AccountingService.Decide(ctx, by, team, namespace, job, verdict, note)
}

func (a *sharedAccounting) SetRule(ctx context.Context, by cost.Actor, team string, on bool) (cost.RuleState, error) {
	defer a.changes.Add(1)
	return a.AccountingService.SetRule(ctx, by, team, on)
}

func (a *sharedAccounting) SetSharedCost(ctx context.Context, by cost.Actor, in cost.SharedCostInput) (store.PoolSharedCost, error) {
	defer a.changes.Add(1)
	return a.AccountingService.SetSharedCost(ctx, by, in)
}

func (a *sharedAccounting) SetComparison(ctx context.Context, by cost.Actor, in cost.ComparisonInput) (store.CostComparison, error) {
	defer a.changes.Add(1)
	return a.AccountingService.SetComparison(ctx, by, in)
}

// withSharedFigures returns status deps whose Prometheus metrics, weekly
// chart and team cost sections are shared between page views; d itself is left as it is.
func withSharedFigures(d *StatusDeps) *StatusDeps {
	if d == nil {
		return nil
	}
	out := *d
	if out.GPU != nil {
		out.GPU = newSharedGPUMetrics(out.GPU)
	}
	if out.Accounting != nil && out.Costs != nil {
		out.Accounting = newSharedAccounting(out.Accounting, out.Costs.LedgerVersion)
	}
	return &out
}
