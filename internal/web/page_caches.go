package web

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/gantry-dev/gantry/internal/cost"
	"github.com/gantry-dev/gantry/internal/gpu"
	"github.com/gantry-dev/gantry/internal/servertiming"
	"github.com/gantry-dev/gantry/internal/store"
)

// scrapeInterval is how often Prometheus scrapes the DCGM exporters: a
// figure read from it is no fresher than this, so pages share one query
// per key for this long.
const scrapeInterval = 15 * time.Second

// maxCachedFigures bounds each page cache's live entries; past it,
// everything is dropped.
const maxCachedFigures = 4096

// sharedFigures keeps figures by key until they expire, and makes
// concurrent misses of one key wait for one load. Errors are not kept.
// Expiry runs on the wall clock, not the handler's (tests freeze that).
//
// Nobody but the view that starts a reload waits for it:
//   - Figures up to one more ttl past their expiry are answered at once
//     while one load refreshes them in the background (stale-while-
//     revalidate); after a quiet spell longer than that, the view waits for
//     fresh figures as on a miss.
//   - Callers put what the figures derive from (a ledger version, this
//     replica's change count) in the key, so a change is a miss. Keys that
//     differ only by a ledger version share a family: while one view loads
//     the family's new key, views arriving meanwhile get the family's last
//     figures (at most maxFamilyAge old), as if they had come a moment
//     earlier. The view that starts the load, a sequential reader after a
//     change, always gets the fresh figures; so does whoever made a change
//     through this replica, since the change count is part of the family.
type sharedFigures[V any] struct {
	group singleflight.Group
	mu    sync.Mutex
	byKey map[string]sharedEntry[V]
	// latest is each family's last loaded figures; loading counts the
	// family's loads in flight.
	latest  map[string]familyEntry[V]
	loading map[string]int
	// keyOf is each family's newest kept key: a newer load drops the
	// family's older figures without looking through every key.
	keyOf map[string]string
	// swept is when figures past their grace were last dropped.
	swept time.Time
	// asked is each family of figures of now that views asked for
	// (getRecent), refreshed when they were last looked through for reads
	// due, refresh how soon and for how long (figures_refresh.go).
	asked     map[string]askedFamily[V]
	refreshed time.Time
	refresh   refreshTimes
}

// sweepEvery spaces the sweeps for figures past their grace: one per load
// looked through every key (thousands, one per job, on the job page), a
// few percent of the portal's CPU at 10,000 workloads.
const sweepEvery = time.Second

type sharedEntry[V any] struct {
	value  V
	family string
	// started is when the load of value began: a load that began earlier
	// (a view that read the ledger version just before a change) does not
	// displace it.
	started time.Time
	expires time.Time
	// ttl is how long the value was fresh for, and how long past that
	// it may be answered while a reload runs.
	ttl time.Duration
}

type familyEntry[V any] struct {
	value    V
	started  time.Time
	loadedAt time.Time
}

// sharedLoadTimeout bounds a load that no view waits for any more, so a
// dependency that never answers does not hold its key for good.
const sharedLoadTimeout = time.Minute

// maxFamilyAge bounds how old a family's last figures may be to answer a
// view while its new figures load.
const maxFamilyAge = time.Minute

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

// meanwhile returns the family's last figures while one of its loads runs.
func (s *sharedFigures[V]) meanwhile(family string) (v V, ok bool) {
	return s.last(family, true)
}

// last returns the family's last figures if they are under maxFamilyAge
// old (and, with whileLoading, only while one of its loads runs).
func (s *sharedFigures[V]) last(family string, whileLoading bool) (v V, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, found := s.latest[family]
	if (whileLoading && s.loading[family] == 0) || !found || time.Since(e.loadedAt) >= maxFamilyAge {
		return v, false
	}
	return e.value, true
}

func (s *sharedFigures[V]) startLoad(family string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.loading == nil {
		s.loading = map[string]int{}
	}
	s.loading[family]++
}

func (s *sharedFigures[V]) endLoad(family string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.loading[family]--; s.loading[family] <= 0 {
		delete(s.loading, family)
	}
}

// get returns key's figures, loading them when they are missing or expired.
// family is key without the ledger version (see sharedFigures). The load
// runs without the request's cancellation, for at most sharedLoadTimeout:
// others may wait on it, and its figures answer later views. A view whose
// ctx ends first gets ctx's error.
func (s *sharedFigures[V]) get(ctx context.Context, family, key string, ttl time.Duration, load func(context.Context) (V, error)) (V, error) {
	if v, ok, stale := s.lookup(key); ok {
		if stale {
			// Answered from the buffered channel nobody reads; an error
			// leaves the stale figures until their grace ends. The view
			// does not wait for the load, so its time is not the view's.
			s.group.DoChan(key, s.reloader(servertiming.Detach(ctx), family, key, ttl, load))
		}
		return v, nil
	}
	if v, ok := s.meanwhile(family); ok {
		return v, nil
	}
	// A view whose ctx ends first (a page that waits for Prometheus only so
	// long) leaves the load running: its figures answer the next view.
	select {
	case r := <-s.group.DoChan(key, s.reloader(ctx, family, key, ttl, load)):
		if r.Err != nil {
			var zero V
			return zero, r.Err
		}
		return r.Val.(V), nil
	case <-ctx.Done():
		var zero V
		return zero, fmt.Errorf("figures %s still loading: %w", key, ctx.Err())
	}
}

// getOrLast is get for figures a view may show one change behind: while
// key's figures are missing and the family's last ones are under
// maxFamilyAge old, it answers those at once and loads key's in the
// background, so no view waits for the read. The job page's typical wait
// (the median of the team's week of waits) asks this way: one more ended
// run does not move it by anything a person would notice, and in the
// 50,000-workload run the view that came first after each change waited
// 1-3 s for the team's week to be read while evictions ended runs.
func (s *sharedFigures[V]) getOrLast(ctx context.Context, family, key string, ttl time.Duration, load func(context.Context) (V, error)) (V, error) {
	if _, ok, _ := s.lookup(key); !ok {
		if v, ok := s.last(family, false); ok {
			s.group.DoChan(key, s.reloader(servertiming.Detach(ctx), family, key, ttl, load))
			return v, nil
		}
	}
	return s.get(ctx, family, key, ttl, load)
}

// reloader is the load of key's figures that get and getOrLast share
// through the single flight: it reads nothing while key's are fresh.
func (s *sharedFigures[V]) reloader(ctx context.Context, family, key string, ttl time.Duration, load func(context.Context) (V, error)) func() (any, error) {
	return func() (any, error) {
		if v, ok, stale := s.lookup(key); ok && !stale {
			return v, nil
		}
		s.startLoad(family)
		defer s.endLoad(family)
		started := time.Now()
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sharedLoadTimeout)
		defer cancel()
		v, err := load(lctx)
		if err != nil {
			return v, err
		}
		s.keep(family, key, v, ttl, started)
		return v, nil
	}
}

func (s *sharedFigures[V]) keep(family, key string, v V, ttl time.Duration, started time.Time) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byKey == nil {
		s.byKey = map[string]sharedEntry[V]{}
		s.latest = map[string]familyEntry[V]{}
		s.keyOf = map[string]string{}
	}
	// The family's figures whose load began before this one's (an earlier
	// ledger version, which views ask for no more once they read the new
	// one) are never answered again: drop them on each load, so the cache
	// holds what is live rather than every ledger version it has seen
	// (each ended run is a new version, and a team's figures hold its week
	// of waits).
	newest := true
	if old, ok := s.keyOf[family]; ok && old != key {
		if e, ok := s.byKey[old]; ok {
			if e.started.Before(started) {
				delete(s.byKey, old)
			} else {
				newest = false
			}
		}
	}
	// Figures past their grace, and families' last figures too old to
	// answer for, are never answered again either.
	if now.Sub(s.swept) >= sweepEvery {
		s.swept = now
		for k, e := range s.byKey {
			if !now.Before(e.expires.Add(e.ttl)) {
				delete(s.byKey, k)
				if s.keyOf[e.family] == k {
					delete(s.keyOf, e.family)
				}
			}
		}
		for f, e := range s.latest {
			if now.Sub(e.loadedAt) >= maxFamilyAge {
				delete(s.latest, f)
			}
		}
	}
	if len(s.byKey) >= maxCachedFigures {
		clear(s.byKey)
		clear(s.keyOf)
	}
	if len(s.latest) >= maxCachedFigures {
		clear(s.latest)
	}
	s.byKey[key] = sharedEntry[V]{value: v, family: family, started: started, expires: now.Add(ttl - expiryJitter(ttl)), ttl: ttl}
	if newest {
		s.keyOf[family] = key
	}
	if e, ok := s.latest[family]; !ok || !e.started.After(started) {
		s.latest[family] = familyEntry[V]{value: v, started: started, loadedAt: now}
	}
}

// expiryJitter is how much sooner than its ttl a load's figures expire: a
// random part of up to a fifth of it. Figures loaded together (each team's
// after a start, or when one page's views warm them) would otherwise all
// be reloaded in the same instant, their reads side by side on the same
// cores (three teams' accounting at once took 28-84 ms a statement and
// held their views up to 88 ms in a 10,000-workload run).
func expiryJitter(ttl time.Duration) time.Duration {
	if ttl < 5 {
		return 0
	}
	return rand.N(ttl / 5)
}

// sharedGPUMetrics answers the cluster and job pages' Prometheus queries
// once per scrape interval per key, however many people look: a figure up
// to 15 s old is what the next scrape would have changed anyway.
type sharedGPUMetrics struct {
	next     GPUMetrics
	nodes    sharedFigures[map[string]float64]
	usage    sharedFigures[gpu.Usage]
	measured sharedFigures[gpu.Measured]
	// current is every GPU pod's figures now, series a running job's chart
	// (currentGPUMetrics).
	current sharedFigures[*gpu.Current]
	series  sharedFigures[[]gpu.Sample]
}

// currentGPUMetrics read every running job's current figures at once and
// a job's chart on its own (gpu.Metrics).
type currentGPUMetrics interface {
	CurrentFigures(ctx context.Context, at time.Time) (*gpu.Current, error)
	JobSeries(ctx context.Context, j gpu.Job, start, end time.Time) ([]gpu.Sample, error)
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
	return g.nodes.get(ctx, "nodes", endKey(at), scrapeInterval, func(ctx context.Context) (map[string]float64, error) {
		return g.next.NodeUtilization(ctx, at)
	})
}

func (g *sharedGPUMetrics) JobUsage(ctx context.Context, j gpu.Job, start, end time.Time) (gpu.Usage, error) {
	return g.jobUsage(ctx, j, start, end, g.usage.get)
}

func (g *sharedGPUMetrics) MeasuredUse(ctx context.Context, j gpu.Job, start, end time.Time) (gpu.Measured, error) {
	return g.measuredUse(ctx, j, start, end, g.measured.get)
}

// RecentJobUsage is JobUsage for a page that shows how old its figures
// are (gpu.Usage.At): while the run's figures for now are missing and its
// last ones are under maxFamilyAge old, it answers those at once and reads
// new ones in the background for the next view; a run viewed within the
// last minutes is read again before its figures are that old (getRecent),
// so only a run nobody looked at for that long waits for Prometheus. (A
// running job's page waited up to its whole wait, 25 ms, whenever its
// figures had gone past their grace: the job page's p99 in the load runs,
// where each running job is viewed every 20 s or so.)
//
// A running job's current figures come from every GPU pod's, read in one
// query a scrape interval however many jobs are viewed (gpu.Current), and
// only its chart from a query of its own: a chart that has not come within
// ctx leaves the figures shown without it (gpu.Usage.SeriesPending).
func (g *sharedGPUMetrics) RecentJobUsage(ctx context.Context, j gpu.Job, start, end time.Time) (gpu.Usage, error) {
	cm, ok := g.next.(currentGPUMetrics)
	if !ok || endKey(end) != "now" {
		return g.jobUsage(ctx, j, start, end, g.usage.getOrLast)
	}
	family := runFamily(j, start)
	var (
		wg        sync.WaitGroup
		series    []gpu.Sample
		seriesErr error
	)
	wg.Go(func() {
		series, seriesErr = g.series.getRecent(ctx, family, family+"|now", scrapeInterval, end, func(ctx context.Context, end time.Time) ([]gpu.Sample, error) {
			return cm.JobSeries(ctx, j, start, end)
		})
	})
	cur, err := g.current.getRecent(ctx, "pods", "pods|now", scrapeInterval, end, func(ctx context.Context, end time.Time) (*gpu.Current, error) {
		return cm.CurrentFigures(ctx, end)
	})
	wg.Wait()
	if err != nil {
		return gpu.Usage{}, err
	}
	u := cur.Job(j, start)
	switch {
	case seriesErr == nil:
		u.Series = series
	case ctx.Err() != nil:
		u.SeriesPending = true
	default:
		return gpu.Usage{}, seriesErr
	}
	return u, nil
}

// RecentMeasuredUse is MeasuredUse as RecentJobUsage answers (the
// measured range's end is gpu.Measured.Through).
func (g *sharedGPUMetrics) RecentMeasuredUse(ctx context.Context, j gpu.Job, start, end time.Time) (gpu.Measured, error) {
	if endKey(end) != "now" {
		return g.measuredUse(ctx, j, start, end, g.measured.getOrLast)
	}
	family := runFamily(j, start)
	return g.measured.getRecent(ctx, family, family+"|now", scrapeInterval, end, func(ctx context.Context, end time.Time) (gpu.Measured, error) {
		return g.next.MeasuredUse(ctx, j, start, end)
	})
}

// figuresGetter is sharedFigures' get or getOrLast.
type figuresGetter[V any] func(ctx context.Context, family, key string, ttl time.Duration, load func(context.Context) (V, error)) (V, error)

// runFamily names a run's figures: the job (its kind names its pods) and
// its admission.
func runFamily(j gpu.Job, start time.Time) string {
	return fmt.Sprintf("%s/%s|%s|%s", j.Namespace, j.Name, j.Kind, start.UTC().Format(time.RFC3339Nano))
}

func (g *sharedGPUMetrics) jobUsage(ctx context.Context, j gpu.Job, start, end time.Time, get figuresGetter[gpu.Usage]) (gpu.Usage, error) {
	family := runFamily(j, start)
	return get(ctx, family, family+"|"+endKey(end), scrapeInterval, func(ctx context.Context) (gpu.Usage, error) {
		return g.next.JobUsage(ctx, j, start, end)
	})
}

func (g *sharedGPUMetrics) measuredUse(ctx context.Context, j gpu.Job, start, end time.Time, get figuresGetter[gpu.Measured]) (gpu.Measured, error) {
	family := runFamily(j, start)
	return get(ctx, family, family+"|"+endKey(end), scrapeInterval, func(ctx context.Context) (gpu.Measured, error) {
		return g.next.MeasuredUse(ctx, j, start, end)
	})
}

// teamAccountingTTL bounds how stale a team's cost per accepted unit may
// be on a replica that did not make the change (a verdict, a rule, a shared
// cost, a comparison entered on another replica) while it does not hear
// the database's notices; on the replica that made it, and after any
// ledger change, the next view reads it afresh. While it hears them, a
// change anywhere is read on the next view, and the figures are kept for
// keptAccountingTTL, which bounds a notice lost unnoticed.
const (
	teamAccountingTTL = 5 * time.Second
	keptAccountingTTL = time.Minute
)

// accountingTopics are the tables a team's accounting reads besides the
// ledger (whose version is in every key).
func accountingTopics() []string {
	return []string{store.TopicVerdicts, store.TopicAcceptanceRules, store.TopicSharedCosts, store.TopicEndpointUsage,
		store.TopicIdleEpisodes}
}

// sharedAccounting answers the cluster page's weekly chart (once per
// ledger version, store.LedgerVersion, one row read per view, and week),
// and the team page's cost section (once per ledger version, change made
// through it, and change heard or teamAccountingTTL), however many people
// look; the rest of the service is passed on. A job's result (its verdict,
// or the team's rule over its runs) is not kept here: the job page reads
// the job's verdict and runs in the one round trip it makes for the job's
// rows anyway (store.ReadJobTogether), and a figure kept per job viewed
// held 3.2 MiB at 10,000 workloads (the load run's heap profile).
type sharedAccounting struct {
	AccountingService
	ledgerVersion func(context.Context) (int64, error)
	// heard names the changes to accountingTopics the database announced.
	heard *store.Changes
	// changes counts the writes made through this replica's service.
	changes atomic.Int64
	weeks   sharedFigures[[]cost.TeamWeeks]
	teams   sharedFigures[cost.TeamAccounting]
}

func newSharedAccounting(next AccountingService, ledgerVersion func(context.Context) (int64, error), heard *store.Changes) *sharedAccounting {
	return &sharedAccounting{AccountingService: next, ledgerVersion: ledgerVersion, heard: heard}
}

// heardState names the announced changes under a team's figures, and how
// long figures read under it may be kept.
func (a *sharedAccounting) heardState() (string, time.Duration) {
	state, live := a.heard.State(accountingTopics()...)
	if !live {
		return "", teamAccountingTTL
	}
	return state, keptAccountingTTL
}

// state names what the figures derive from: the ledger's version and this
// replica's changes (the family keeps the changes, not the version).
func (a *sharedAccounting) state(ctx context.Context) (version string, changes int64, err error) {
	v, err := a.ledgerVersion(ctx)
	if err != nil {
		return "", 0, err
	}
	return strconv.FormatInt(v, 10), a.changes.Load(), nil
}

// Weeks is shared by every caller; they must not change what it returns.
func (a *sharedAccounting) Weeks(ctx context.Context, weeks int) ([]cost.TeamWeeks, error) {
	version, changes, err := a.state(ctx)
	if err != nil {
		return nil, err
	}
	family := fmt.Sprintf("%d|%d", weeks, changes)
	// The chart sums the ledger's ended runs by the week they ended in: it
	// changes with the ledger (the version) and the week, not the minute.
	// (The minute used to be in the key: at each turn one view waited for
	// the whole re-read, 0.3-0.5 s at 10,000 runs, and others piled up.)
	key := family + "|" + version + "|" + cost.WeekStart(time.Now()).Format(time.RFC3339)
	return a.weeks.get(ctx, family, key, time.Minute, func(ctx context.Context) ([]cost.TeamWeeks, error) {
		return a.AccountingService.Weeks(ctx, weeks)
	})
}

// Team is shared by every caller; they must not change what it returns.
func (a *sharedAccounting) Team(ctx context.Context, team string, month time.Time, trend int) (cost.TeamAccounting, error) {
	version, changes, err := a.state(ctx)
	if err != nil {
		return cost.TeamAccounting{}, err
	}
	family := fmt.Sprintf("%s|%s|%d|%d", team, month.UTC().Format("2006-01"), trend, changes)
	heard, ttl := a.heardState()
	return a.teams.get(ctx, family, family+"|"+version+"|"+heard, ttl, func(ctx context.Context) (cost.TeamAccounting, error) {
		return a.AccountingService.Team(ctx, team, month, trend)
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
// chart and team cost sections are shared between page views, and whose
// ledger version and prices are kept until they change (with changes); d
// itself is left as it is.
func withSharedFigures(d *StatusDeps, changes *store.Changes) *StatusDeps {
	if d == nil {
		return nil
	}
	out := *d
	if out.Costs != nil && changes != nil {
		out.Costs = newKeptCosts(out.Costs, changes)
	}
	if out.GPU != nil {
		out.GPU = newSharedGPUMetrics(out.GPU)
	}
	if out.Accounting != nil && out.Costs != nil {
		out.Accounting = newSharedAccounting(out.Accounting, out.Costs.LedgerVersion, changes)
	}
	return &out
}
