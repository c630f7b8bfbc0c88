package web

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/gantry-dev/gantry/internal/cost"
	"github.com/gantry-dev/gantry/internal/gpu"
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
type sharedFigures[V any] struct {
	group singleflight.Group
	mu    sync.Mutex
	byKey map[string]sharedEntry[V]
}

type sharedEntry[V any] struct {
	value   V
	expires time.Time
}

func (s *sharedFigures[V]) fresh(key string) (V, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.byKey[key]
	if !ok || !time.Now().Before(e.expires) {
		var zero V
		return zero, false
	}
	return e.value, true
}

// get returns key's figures, loading them when they are missing or expired.
// The load runs without the request's cancellation: others may wait on it.
func (s *sharedFigures[V]) get(ctx context.Context, key string, ttl time.Duration, load func(context.Context) (V, error)) (V, error) {
	if v, ok := s.fresh(key); ok {
		return v, nil
	}
	v, err, _ := s.group.Do(key, func() (any, error) {
		if v, ok := s.fresh(key); ok {
			return v, nil
		}
		v, err := load(context.WithoutCancel(ctx))
		if err != nil {
			return v, err
		}
		now := time.Now()
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.byKey == nil {
			s.byKey = map[string]sharedEntry[V]{}
		}
		if len(s.byKey) >= maxCachedFigures {
			for k, e := range s.byKey {
				if !now.Before(e.expires) {
					delete(s.byKey, k)
				}
			}
			if len(s.byKey) >= maxCachedFigures {
				clear(s.byKey)
			}
		}
		s.byKey[key] = sharedEntry[V]{value: v, expires: now.Add(ttl)}
		return v, nil
	})
	if err != nil {
		var zero V
		return zero, err
	}
	return v.(V), nil
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

// sharedWeeks answers the cluster page's weekly chart from one accounting
// query per ledger change (store.LedgerVersion, one row read per view) and
// minute (the current week grows); the rest of the service is passed on.
type sharedWeeks struct {
	AccountingService
	ledgerVersion func(context.Context) (int64, error)
	weeks         sharedFigures[[]cost.TeamWeeks]
}

func newSharedWeeks(next AccountingService, ledgerVersion func(context.Context) (int64, error)) *sharedWeeks {
	return &sharedWeeks{AccountingService: next, ledgerVersion: ledgerVersion}
}

// Weeks is shared by every caller; they must not change what it returns.
func (a *sharedWeeks) Weeks(ctx context.Context, weeks int) ([]cost.TeamWeeks, error) {
	version, err := a.ledgerVersion(ctx)
	if err != nil {
		return nil, err
	}
	key := fmt.Sprintf("%d|%d|%s", weeks, version, time.Now().UTC().Truncate(time.Minute).Format(time.RFC3339))
	return a.weeks.get(ctx, key, time.Minute, func(ctx context.Context) ([]cost.TeamWeeks, error) {
		return a.AccountingService.Weeks(ctx, weeks)
	})
}

// withSharedFigures returns status deps whose Prometheus metrics and weekly
// accounting are shared between page views; d itself is left as it is.
func withSharedFigures(d *StatusDeps) *StatusDeps {
	if d == nil {
		return nil
	}
	out := *d
	if out.GPU != nil {
		out.GPU = newSharedGPUMetrics(out.GPU)
	}
	if out.Accounting != nil && out.Costs != nil {
		out.Accounting = newSharedWeeks(out.Accounting, out.Costs.LedgerVersion)
	}
	return &out
}
