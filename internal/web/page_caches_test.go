package web

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gantry-dev/gantry/internal/catalog"
	"github.com/gantry-dev/gantry/internal/cost"
	"github.com/gantry-dev/gantry/internal/gpu"
	"github.com/gantry-dev/gantry/internal/launch"
	"github.com/gantry-dev/gantry/internal/naming"
	"github.com/gantry-dev/gantry/internal/queue"
	"github.com/gantry-dev/gantry/internal/store"
)

// countingPrometheus counts the queries the pages send, each taking a
// little while as a real one does, so concurrent views overlap.
type countingPrometheus struct {
	nodes, usage, measured atomic.Int64
}

const fakeQueryTime = 20 * time.Millisecond

func (p *countingPrometheus) NodeUtilization(context.Context, time.Time) (map[string]float64, error) {
	p.nodes.Add(1)
	time.Sleep(fakeQueryTime)
	return map[string]float64{"gpu-0000": 50}, nil
}

func (p *countingPrometheus) JobUsage(_ context.Context, _ gpu.Job, _, end time.Time) (gpu.Usage, error) {
	p.usage.Add(1)
	time.Sleep(fakeQueryTime)
	return gpu.Usage{HasData: true, Utilization: 42, At: end}, nil
}

func (p *countingPrometheus) MeasuredUse(_ context.Context, _ gpu.Job, start, end time.Time) (gpu.Measured, error) {
	p.measured.Add(1)
	time.Sleep(fakeQueryTime)
	return gpu.Measured{Measured: end.Sub(start), Useful: end.Sub(start) / 2, Through: end}, nil
}

// countingAccounting counts the weekly and team accounting queries.
type countingAccounting struct {
	AccountingService
	weeks, teams, results atomic.Int64
}

func (a *countingAccounting) JobResult(context.Context, string, string, string, string) (cost.JobResult, error) {
	a.results.Add(1)
	time.Sleep(fakeQueryTime)
	return cost.JobResult{ByRule: true}, nil
}

func (a *countingAccounting) Team(context.Context, string, time.Time, int) (cost.TeamAccounting, error) {
	a.teams.Add(1)
	time.Sleep(fakeQueryTime)
	return cost.TeamAccounting{EndpointsCounted: true}, nil
}

func (a *countingAccounting) Decide(_ context.Context, _ cost.Actor, team, namespace, job, verdict, _ string) (store.RunVerdict, error) {
	return store.RunVerdict{Team: team, Namespace: namespace, JobName: job, Verdict: verdict}, nil
}

func (a *countingAccounting) Weeks(context.Context, int) ([]cost.TeamWeeks, error) {
	n := a.weeks.Add(1)
	time.Sleep(fakeQueryTime)
	// Each read finds 8 more useful GPU-hours, as if a run had ended.
	return []cost.TeamWeeks{{Team: "vision", Weeks: []cost.WeekHours{{Week: cost.WeekStart(time.Now()), Useful: 8 * float64(n)}}}}, nil
}

// versionedLedger is the load cluster's ledger with a version a test bumps.
type versionedLedger struct {
	*loadCluster
	version atomic.Int64
}

func (l *versionedLedger) LedgerVersion(context.Context) (int64, error) { return l.version.Load(), nil }
func (l *versionedLedger) LedgerMark(context.Context) (store.LedgerMark, error) {
	return store.LedgerMark{Version: l.version.Load()}, nil
}

// viewsBy runs views page views split over users people at once.
func viewsBy(t *testing.T, users, views int, view func(user int) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, views)
	for u := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := u; i < views; i += users {
				if err := view(u); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

// TestClusterAndJobPagesShareQueries: 100 views of the cluster page by 50
// people make at most 2 weekly accounting queries and 2 Prometheus
// queries, and 100 views of a running job's page at most 2 of each of its
// Prometheus queries; a ledger change is seen on the next view.
func TestClusterAndJobPagesShareQueries(t *testing.T) {
	lc := newLoadCluster()
	ledger := &versionedLedger{loadCluster: lc}
	prom := &countingPrometheus{}
	acc := &countingAccounting{}
	status := withSharedFigures(&StatusDeps{Reader: queue.StatusReader{Queues: lc, Workloads: lc.benchCluster}, Jobs: lc.benchCluster,
		Costs: ledger, Pools: lc, GPU: prom, Accounting: acc}, nil)
	h := &handler{Deps: Deps{Now: time.Now, Log: slog.New(slog.DiscardHandler), Jobs: launch.Reader{Jobs: lc.benchCluster}, Status: status},
		ledgerFigures: newLedgerFiguresCache()}

	// weeklyShown is the useful GPU-hours the last cluster view's chart showed.
	var weeklyShown atomic.Int64
	clusterView := func(int) error {
		c, _ := gin.CreateTestContext(httptest.NewRecorder())
		c.Request = httptest.NewRequest("GET", "/cluster", nil)
		cs, err := h.clusterStatusOf(c.Request.Context())
		if err != nil {
			return err
		}
		if len(cs.Pools) != 1 || cs.Pools[0].Utilization == nil {
			return fmt.Errorf("cluster page shows pools %+v, want one pool with its utilization", cs.Pools)
		}
		var weekly strings.Builder
		if err := h.clusterWeeklyCharts(c).Render(c.Request.Context(), &weekly); err != nil {
			return err
		}
		if n := strings.Count(weekly.String(), `data-testid="weekly-vision"`); n != 1 {
			return fmt.Errorf("cluster page shows %d weekly charts, want 1", n)
		}
		for n := acc.weeks.Load(); n > 0; n-- {
			if strings.Contains(weekly.String(), `data-value="`+hours(8*float64(n))+` GPU-h"`) {
				weeklyShown.Store(8 * n)
				return nil
			}
		}
		return fmt.Errorf("cluster page's weekly chart shows none of the figures read: %s", weekly.String())
	}
	viewsBy(t, 50, 100, clusterView)
	assert.LessOrEqual(t, acc.weeks.Load(), int64(2), "weekly accounting queries for 100 views of the cluster page")
	assert.GreaterOrEqual(t, acc.weeks.Load(), int64(1))
	assert.LessOrEqual(t, prom.nodes.Load(), int64(2), "Prometheus queries for 100 views of the cluster page")
	t.Logf("100 cluster page views by 50 users: %d weekly accounting queries, %d Prometheus queries", acc.weeks.Load(), prom.nodes.Load())

	before := acc.weeks.Load()
	ledger.version.Add(1) // a run ended: the chart must show it
	require.NoError(t, clusterView(0))
	assert.Equal(t, before+1, acc.weeks.Load(), "a ledger change is read on the next view")
	assert.Equal(t, 8*acc.weeks.Load(), weeklyShown.Load(), "the next view's chart shows the figures read after the change, not the chart drawn before")

	i := loadJobs - 1 // admitted and running
	team := loadTeams[i%len(loadTeams)]
	rec := store.Launch{Team: team, Name: fmt.Sprintf("train-%05d", i), Namespace: naming.Namespace(team), Kind: string(catalog.KindTraining)}
	viewsBy(t, 50, 100, func(int) error {
		q, err := h.jobQueueOf(context.Background(), rec, nil)
		if err != nil {
			return err
		}
		if q.GPU == nil || q.GPU.Utilization != 42 {
			return fmt.Errorf("job page shows GPU usage %+v, want 42%%", q.GPU)
		}
		return nil
	})
	assert.LessOrEqual(t, prom.usage.Load(), int64(2), "GPU usage queries for 100 views of a running job's page")
	assert.LessOrEqual(t, prom.measured.Load(), int64(2), "measured-use queries for 100 views of a running job's page")
	t.Logf("100 job page views by 50 users: %d usage and %d measured-use Prometheus queries", prom.usage.Load(), prom.measured.Load())

	teamView := func(int) error {
		ta, err := h.Status.Accounting.Team(context.Background(), team, time.Now(), cost.TrendMonths)
		if err != nil {
			return err
		}
		if !ta.EndpointsCounted {
			return fmt.Errorf("team page shows %+v, not the service's answer", ta)
		}
		return nil
	}
	resultView := func(int) error {
		res, err := h.Status.Accounting.JobResult(context.Background(), team, rec.Namespace, rec.Name, rec.Kind)
		if err != nil {
			return err
		}
		if !res.ByRule {
			return fmt.Errorf("job page shows result %+v, not the service's answer", res)
		}
		return nil
	}
	viewsBy(t, 50, 100, teamView)
	assert.LessOrEqual(t, acc.teams.Load(), int64(2), "team accounting queries for 100 views of a team page")
	t.Logf("100 team page views by 50 users: %d team accounting queries", acc.teams.Load())
	before = acc.teams.Load()
	_, err := h.Status.Accounting.Decide(context.Background(), cost.Actor{Username: "alice"}, team, rec.Namespace, rec.Name, store.VerdictAccepted, "")
	require.NoError(t, err)
	require.NoError(t, teamView(0))
	assert.Equal(t, before+1, acc.teams.Load(), "a verdict is counted on the next view")
	results := acc.results.Load()
	require.NoError(t, resultView(0))
	assert.Equal(t, results+1, acc.results.Load(), "a verdict shows on the job page's next view")
}

// BenchmarkClusterPageQueries serves the cluster page's figures to 50 users
// at once over the production-like caches, with Prometheus and the weekly
// accounting query each taking 20 ms, as they are sent (shared=false) and
// as the portal shares them (shared=true); queries/view is what reaches
// Prometheus and Postgres per page view.
func BenchmarkClusterPageQueries(b *testing.B) {
	lc := newLoadCluster()
	for _, shared := range []bool{false, true} {
		b.Run(fmt.Sprintf("shared=%t", shared), func(b *testing.B) {
			prom, acc := &countingPrometheus{}, &countingAccounting{}
			status := &StatusDeps{Reader: queue.StatusReader{Queues: lc, Workloads: lc.benchCluster}, Jobs: lc.benchCluster,
				Costs: lc.benchCluster, Pools: lc, GPU: prom, Accounting: acc}
			if shared {
				status = withSharedFigures(status, nil)
			}
			h := &handler{Deps: Deps{Now: time.Now, Log: slog.New(slog.DiscardHandler), Status: status}, ledgerFigures: newLedgerFiguresCache()}
			view := func() error {
				c, _ := gin.CreateTestContext(httptest.NewRecorder())
				c.Request = httptest.NewRequest("GET", "/cluster", nil)
				if _, err := h.clusterStatusOf(c.Request.Context()); err != nil {
					return err
				}
				h.clusterWeeklyCharts(c)
				return nil
			}
			// Warm: the ledger's figures are kept in both cases; p99 is then
			// the steady state, not the first view's.
			require.NoError(b, view())
			prom.nodes.Store(0)
			acc.weeks.Store(0)
			runUsers(b, view)
			b.ReportMetric(float64(prom.nodes.Load()+acc.weeks.Load())/float64(b.N), "queries/view")
		})
	}
}

// TestSharedFiguresAnswerStaleWhileOneReloadRuns: past their ttl, figures
// are answered at once while one background load refreshes them; after a
// quiet spell of two ttls a view waits for fresh ones; an error is not kept.
func TestSharedFiguresAnswerStaleWhileOneReloadRuns(t *testing.T) {
	const ttl = 200 * time.Millisecond
	var s sharedFigures[int]
	var loads atomic.Int64
	release := make(chan struct{})
	load := func(context.Context) (int, error) {
		n := int(loads.Add(1))
		if n == 2 {
			<-release // the background reload takes its time
		}
		return n, nil
	}
	ctx := t.Context()
	v, err := s.get(ctx, "k", "k", ttl, load)
	require.NoError(t, err)
	require.Equal(t, 1, v)

	time.Sleep(ttl + 20*time.Millisecond)
	for range 20 {
		start := time.Now()
		v, err = s.get(ctx, "k", "k", ttl, load)
		require.NoError(t, err)
		assert.Equal(t, 1, v, "the stale figures, while the reload runs")
		assert.Less(t, time.Since(start), ttl/2, "nobody waits for the reload")
	}
	close(release)
	require.Eventually(t, func() bool {
		v, err := s.get(ctx, "k", "k", ttl, load)
		return err == nil && v == 2
	}, 5*time.Second, 5*time.Millisecond, "the reloaded figures replace the stale ones")
	assert.Equal(t, int64(2), loads.Load(), "one reload for all the views that found them stale")

	time.Sleep(2*ttl + 20*time.Millisecond)
	v, err = s.get(ctx, "k", "k", ttl, load)
	require.NoError(t, err)
	assert.Equal(t, 3, v, "after a quiet spell the view waits for fresh figures")

	_, err = s.get(ctx, "bad", "bad", ttl, func(context.Context) (int, error) { return 0, fmt.Errorf("database not answering") })
	require.Error(t, err)
	v, err = s.get(ctx, "bad", "bad", ttl, func(context.Context) (int, error) { return 7, nil })
	require.NoError(t, err)
	assert.Equal(t, 7, v, "an error is not kept")
}

// TestSharedFiguresAnswerTheFamilyWhileANewVersionLoads: after a ledger
// change (a new key in the same family) the view that comes first waits for
// the new figures; views arriving while they load get the last ones; a
// change made through this replica (another family) is never answered old.
func TestSharedFiguresAnswerTheFamilyWhileANewVersionLoads(t *testing.T) {
	var s sharedFigures[string]
	ctx := t.Context()
	v, err := s.get(ctx, "team|0", "team|0|v1", time.Minute, func(context.Context) (string, error) { return "v1", nil })
	require.NoError(t, err)
	require.Equal(t, "v1", v)

	loading, release := make(chan struct{}), make(chan struct{})
	first := make(chan string)
	go func() {
		v, _ := s.get(ctx, "team|0", "team|0|v2", time.Minute, func(context.Context) (string, error) {
			close(loading)
			<-release
			return "v2", nil
		})
		first <- v
	}()
	<-loading
	for range 10 {
		v, err := s.get(ctx, "team|0", "team|0|v2", time.Minute, func(context.Context) (string, error) { return "", fmt.Errorf("loaded twice") })
		require.NoError(t, err)
		assert.Equal(t, "v1", v, "a view during the reload gets the last figures at once")
	}
	v, err = s.get(ctx, "team|1", "team|1|v2", time.Minute, func(context.Context) (string, error) { return "after my verdict", nil })
	require.NoError(t, err)
	assert.Equal(t, "after my verdict", v, "a change made here is read afresh, reload or not")
	close(release)
	assert.Equal(t, "v2", <-first, "the view that started the reload gets the new figures")
	v, err = s.get(ctx, "team|0", "team|0|v2", time.Minute, func(context.Context) (string, error) { return "", fmt.Errorf("loaded twice") })
	require.NoError(t, err)
	assert.Equal(t, "v2", v)
}

// TestSharedFiguresGetOrLastNeverWaitsForANewVersion: figures a view may
// show one change behind (the job page's typical wait) are answered from
// the family's last ones while the new version loads in the background,
// once; only a family with nothing loaded yet waits.
func TestSharedFiguresGetOrLastNeverWaitsForANewVersion(t *testing.T) {
	var s sharedFigures[string]
	ctx := t.Context()
	v, err := s.getOrLast(ctx, "team|0", "team|0|v1", time.Minute, func(context.Context) (string, error) { return "v1", nil })
	require.NoError(t, err)
	require.Equal(t, "v1", v, "nothing loaded yet: the first view waits for the figures")

	loading, release := make(chan struct{}), make(chan struct{})
	var loads atomic.Int64
	slow := func(context.Context) (string, error) {
		if loads.Add(1) == 1 {
			close(loading)
		}
		<-release
		return "v2", nil
	}
	for range 10 {
		v, err := s.getOrLast(ctx, "team|0", "team|0|v2", time.Minute, slow)
		require.NoError(t, err)
		assert.Equal(t, "v1", v, "a view after the change gets the last figures at once")
	}
	<-loading
	close(release)
	require.Eventually(t, func() bool {
		v, err := s.getOrLast(ctx, "team|0", "team|0|v2", time.Minute, slow)
		return err == nil && v == "v2"
	}, 5*time.Second, time.Millisecond, "the new figures answer once loaded")
	assert.Equal(t, int64(1), loads.Load(), "the new version is read once for all the views")

	v, err = s.get(ctx, "team|0", "team|0|v3", time.Minute, func(context.Context) (string, error) { return "v3", nil })
	require.NoError(t, err)
	assert.Equal(t, "v3", v, "get still reads a change on the next view")
}

// TestSharedFiguresDropWhatCanNoLongerBeAnswered: each ledger change makes
// new keys; the figures of old versions go once past their grace, not when
// the cache is full.
func TestSharedFiguresDropWhatCanNoLongerBeAnswered(t *testing.T) {
	const ttl = 10 * time.Millisecond
	var s sharedFigures[int]
	ctx := t.Context()
	for v := range 50 {
		_, err := s.get(ctx, "team", fmt.Sprintf("team|v%d", v), ttl, func(context.Context) (int, error) { return v, nil })
		require.NoError(t, err)
	}
	time.Sleep(2*ttl + 10*time.Millisecond)
	_, err := s.get(ctx, "team", "team|v50", ttl, func(context.Context) (int, error) { return 50, nil })
	require.NoError(t, err)
	s.mu.Lock()
	defer s.mu.Unlock()
	assert.Len(t, s.byKey, 1, "only the figures of the current version are kept")
	assert.Len(t, s.latest, 1)
}

// TestSharedFiguresKeepOneVersionPerFamily: at 10,000 workloads the ledger
// changes every few seconds; a team's figures (a week of waits) are kept
// for its current version only, not for every version of the last minutes.
func TestSharedFiguresKeepOneVersionPerFamily(t *testing.T) {
	var s sharedFigures[int]
	ctx := t.Context()
	for _, team := range []string{"vision", "nlp"} {
		for v := range 30 {
			_, err := s.get(ctx, team, fmt.Sprintf("%s|v%d", team, v), time.Minute, func(context.Context) (int, error) { return v, nil })
			require.NoError(t, err)
		}
	}
	s.mu.Lock()
	assert.Len(t, s.byKey, 2, "one version per team, both teams kept")
	s.mu.Unlock()
	v, err := s.get(ctx, "vision", "vision|v29", time.Minute, func(context.Context) (int, error) { return 0, fmt.Errorf("loaded twice") })
	require.NoError(t, err)
	assert.Equal(t, 29, v, "the current version is answered from the cache")
}

// TestSharedFiguresAnOlderLoadFinishingLateKeepsTheNewer: a view that read
// the ledger version just before a change loads that version's figures; if
// its load ends after the new version's, the new figures stay the family's.
func TestSharedFiguresAnOlderLoadFinishingLateKeepsTheNewer(t *testing.T) {
	var s sharedFigures[string]
	ctx := t.Context()
	loading, release := make(chan struct{}), make(chan struct{})
	done := make(chan string)
	go func() {
		v, _ := s.get(ctx, "team", "team|v1", time.Minute, func(context.Context) (string, error) {
			close(loading)
			<-release
			return "v1", nil
		})
		done <- v
	}()
	<-loading
	time.Sleep(time.Millisecond) // the newer load begins later
	v, err := s.get(ctx, "team", "team|v2", time.Minute, func(context.Context) (string, error) { return "v2", nil })
	require.NoError(t, err)
	require.Equal(t, "v2", v)
	close(release)
	assert.Equal(t, "v1", <-done, "the older view gets what it asked for")

	v, err = s.get(ctx, "team", "team|v2", time.Minute, func(context.Context) (string, error) { return "", fmt.Errorf("loaded twice") })
	require.NoError(t, err)
	assert.Equal(t, "v2", v, "the newer figures were not displaced")
	s.mu.Lock()
	defer s.mu.Unlock()
	assert.Equal(t, "v2", s.latest["team"].value, "the family's last figures are the newer ones")
}

// TestSharedFiguresSweepFiguresPastTheirGraceOncePerSecond: the job page
// keeps figures per job; a load does not look through every job's figures,
// but those past their grace still go within a second.
func TestSharedFiguresSweepFiguresPastTheirGraceOncePerSecond(t *testing.T) {
	const ttl = 10 * time.Millisecond
	var s sharedFigures[int]
	ctx := t.Context()
	load := func(job string) {
		t.Helper()
		_, err := s.get(ctx, job, job+"|v1", ttl, func(context.Context) (int, error) { return 1, nil })
		require.NoError(t, err)
	}
	for i := range 100 {
		load(fmt.Sprintf("job-%d", i))
	}
	time.Sleep(sweepEvery + 2*ttl)
	load("job-new")
	s.mu.Lock()
	defer s.mu.Unlock()
	assert.Len(t, s.byKey, 1, "the hundred jobs' figures past their grace are gone")
	assert.Len(t, s.keyOf, 1)
}

// countedLedger is the load cluster's ledger counting its reads of ended
// runs, each taking a little while as a real one does.
type countedLedger struct {
	*versionedLedger
	reads atomic.Int64
}

func (l *countedLedger) EachLedgerRow(ctx context.Context, team string, from, to time.Time, rec store.Recorded, fn func(store.LedgerRow) error) error {
	l.reads.Add(1)
	time.Sleep(fakeQueryTime)
	return l.versionedLedger.EachLedgerRow(ctx, team, from, to, rec, fn)
}

// TestNoViewWaitsForTheWeekToSlideAtAMinutesTurn: the team, job and
// cluster pages' ledger figures (a week of ended runs, 0.3-0.5 s to read
// at 10,000 runs) are not read again because a minute turned; a new month
// and a ledger change are read before the view that first asks.
func TestNoViewWaitsForTheWeekToSlideAtAMinutesTurn(t *testing.T) {
	ledger := &countedLedger{versionedLedger: &versionedLedger{loadCluster: newLoadCluster()}}
	h := &handler{Deps: Deps{Now: time.Now, Log: slog.New(slog.DiscardHandler), Status: &StatusDeps{Costs: ledger}},
		ledgerFigures: newLedgerFiguresCache()}
	view := func(at time.Time) time.Duration {
		t.Helper()
		start := time.Now()
		_, err := h.ledgerFiguresOf(t.Context(), "", at)
		require.NoError(t, err)
		return time.Since(start)
	}
	view(time.Date(2026, 11, 3, 12, 0, 59, 900_000_000, time.UTC))
	require.Equal(t, int64(1), ledger.reads.Load())
	took := view(time.Date(2026, 11, 3, 12, 1, 0, 100_000_000, time.UTC))
	assert.Less(t, took, fakeQueryTime, "the view after the minute's turn is answered at once")
	assert.Equal(t, int64(1), ledger.reads.Load(), "the minute's turn is no reason to read the week again")

	view(time.Date(2026, 12, 1, 0, 0, 0, 100_000_000, time.UTC))
	assert.Equal(t, int64(2), ledger.reads.Load(), "a new month is read before the view that first asks")
	ledger.version.Add(1)
	view(time.Date(2026, 12, 1, 0, 0, 1, 0, time.UTC))
	assert.Equal(t, int64(3), ledger.reads.Load(), "so is a ledger change")
}

// TestSharedFiguresLoadedTogetherExpireApart: figures loaded in the same
// instant (every team's after a start) expire over the last fifth of their
// ttl, not at once, so their reloads do not all read side by side.
func TestSharedFiguresLoadedTogetherExpireApart(t *testing.T) {
	const ttl = time.Minute
	var s sharedFigures[int]
	start := time.Now()
	for i := range 100 {
		_, err := s.get(t.Context(), fmt.Sprint(i), fmt.Sprint(i), ttl, func(context.Context) (int, error) { return i, nil })
		require.NoError(t, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	first, last := time.Hour, time.Duration(0)
	for _, e := range s.byKey {
		kept := e.expires.Sub(start)
		first, last = min(first, kept), max(last, kept)
		assert.GreaterOrEqual(t, kept, ttl*4/5, "kept for at least four fifths of the ttl")
		assert.LessOrEqual(t, kept, ttl+time.Second, "and no longer than the ttl")
	}
	assert.Greater(t, last-first, 5*time.Second, "the hundred expiries are spread over seconds, not one instant")
}
