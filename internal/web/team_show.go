package web

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/singleflight"

	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/internal/cost"
	"github.com/gantry-dev/gantry/internal/gpu"
	"github.com/gantry-dev/gantry/internal/kube"
	"github.com/gantry-dev/gantry/internal/money"
	"github.com/gantry-dev/gantry/internal/naming"
	"github.com/gantry-dev/gantry/internal/queue"
	"github.com/gantry-dev/gantry/internal/store"
	"github.com/gantry-dev/gantry/views"
)

// topJobs is how many jobs the top lists show.
const topJobs = 5

// teamStatus is what the team page and GET /api/v1/teams/{team}/status show.
type teamStatus struct {
	Team  string
	Queue queue.QueueSummary
	// QueueErr is set when the cache could not answer (not synced yet).
	QueueErr error
	Waits    []waitStat
	Month    cost.Report
	// Running is what admitted, unfinished runs have cost so far.
	Running cost.Spend
	// AsOf is when Waits, Month and Running were computed: they are shared
	// between requests for a few seconds.
	AsOf time.Time
}

// waitStat is the wait before admission for one flavor.
type waitStat struct {
	Flavor   string `json:"flavor"`
	DayRuns  int    `json:"dayRuns"`
	WeekRuns int    `json:"weekRuns"`
	// The waits' percentiles, in nanoseconds in JSON.
	DayP50  time.Duration `json:"dayP50Nanoseconds"`
	DayP95  time.Duration `json:"dayP95Nanoseconds"`
	WeekP50 time.Duration `json:"weekP50Nanoseconds"`
	WeekP95 time.Duration `json:"weekP95Nanoseconds"`
}

// teamHome sends the user to their first team's page.
func (h *handler) teamHome(c *gin.Context) {
	u, _ := auth.CurrentUser(c)
	teams := teamNames(u)
	if len(teams) == 0 {
		h.fail(c, errPageNotFound)
		return
	}
	c.Redirect(http.StatusFound, "/teams/"+teams[0])
}

// teamShow is a team's page: quota, queue, waits, GPU-hours and spend.
//
// Its sections (status, cost per accepted unit, recovery, webhook,
// acceptance pools, the frame's badges) read PostgreSQL independently, so
// they are read at once: after a ledger change the view that recomputes the
// team's figures waits for its slowest section, not for the sum of a dozen
// round trips, each of which may wait for a core on a busy machine.
func (h *handler) teamShow(c *gin.Context) {
	u, _ := auth.CurrentUser(c)
	team := c.Param("team")
	if !canSeeTeam(u, team) {
		h.fail(c, errNotYourTeam)
		return
	}
	ctx := c.Request.Context()
	var (
		g               errgroup.Group
		ts              teamStatus
		costs           *views.TeamCostProps
		recovery        queue.Recovery
		shown           bool
		webhook         views.TeamWebhookView
		pools           []string
		pending, unread int
	)
	g.Go(func() error {
		pending, unread = h.navBadges(c, u)
		return nil
	})
	g.Go(func() (err error) {
		ts, err = h.teamStatusOf(ctx, team)
		return err
	})
	g.Go(func() error {
		costs = h.teamCostProps(c, team)
		return nil
	})
	g.Go(func() (err error) {
		recovery, shown, err = h.teamRecovery(ctx, team)
		return err
	})
	g.Go(func() (err error) {
		webhook, err = h.teamWebhookView(ctx, u, team)
		return err
	})
	g.Go(func() (err error) {
		pools, err = h.teamAcceptancePools(ctx, u, team)
		return err
	})
	if err := g.Wait(); err != nil {
		h.fail(c, err)
		return
	}
	p := teamStatusProps(ts)
	p.Cost = costs
	p.Recovery = teamRecoveryView(recovery, shown)
	p.Webhook, p.AcceptancePools = webhook, pools
	h.render(c, http.StatusOK, views.TeamStatusPage(h.navCounted(c, "team", pending, unread), p))
}

func (h *handler) teamStatusOf(ctx context.Context, team string) (teamStatus, error) {
	ts := teamStatus{Team: team}
	ts.Queue, ts.QueueErr = h.Status.Reader.TeamQueue(team)
	if ts.QueueErr != nil && !errors.Is(ts.QueueErr, kube.ErrNotSynced) && !errors.Is(ts.QueueErr, kube.ErrNotFound) {
		return teamStatus{}, ts.QueueErr
	}
	f, err := h.teamFiguresOf(ctx, team)
	if err != nil {
		return teamStatus{}, err
	}
	ts.Waits, ts.Month, ts.Running, ts.AsOf = f.waits, f.month, f.running, f.asOf
	return ts, nil
}

// teamFiguresTTL is how long a team's wait and cost figures are reused:
// they walk every Workload of the team and the ledger's last weeks, which at
// thousands of workloads costs more than a page view should. Quota and queue
// counts stay live.
const teamFiguresTTL = 5 * time.Second

// teamFigures are a team's waits, month and running spend at asOf.
type teamFigures struct {
	waits   []waitStat
	month   cost.Report
	running cost.Spend
	asOf    time.Time
	// unsynced marks figures computed before the cache listed once: not kept.
	unsynced bool
}

// teamFiguresCache keeps teamFigures per team; concurrent requests for a
// team whose figures are stale share one computation, and requests that
// come while it runs get the team's last figures (at most maxFamilyAge
// old) instead of waiting: only the view that starts it waits.
type teamFiguresCache struct {
	group   singleflight.Group
	mu      sync.Mutex
	byTeam  map[string]teamFigures
	loading map[string]bool
}

func newTeamFiguresCache() *teamFiguresCache {
	return &teamFiguresCache{byTeam: map[string]teamFigures{}, loading: map[string]bool{}}
}

// fresh returns the team's figures if they are younger than teamFiguresTTL
// at now, or, while they are being computed again, its last figures.
func (c *teamFiguresCache) fresh(team string, now time.Time) (teamFigures, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f, ok := c.byTeam[team]
	if !ok || now.Before(f.asOf) {
		return f, false
	}
	age := now.Sub(f.asOf)
	return f, age < teamFiguresTTL || (c.loading[team] && age < maxFamilyAge)
}

// recent returns the team's figures if they are younger than twice
// teamFiguresTTL: old enough to compute again, young enough to answer
// meanwhile.
func (c *teamFiguresCache) recent(team string, now time.Time) (teamFigures, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f, ok := c.byTeam[team]
	return f, ok && !now.Before(f.asOf) && now.Sub(f.asOf) < 2*teamFiguresTTL
}

func (c *teamFiguresCache) setLoading(team string, on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.loading[team] = on
}

// teamFiguresOf returns the team's figures, at most teamFiguresTTL old to
// the view that finds them so, which then computes them again in the
// background; views meanwhile get the last figures, as long as those are
// younger than twice teamFiguresTTL (the page says when they were
// computed). After a quiet spell the view waits for fresh figures. No
// view waits for a walk it could have been spared: at 10,000 workloads
// the one view per team in five seconds that did was most of the team
// page's slowest 1%.
func (h *handler) teamFiguresOf(ctx context.Context, team string) (teamFigures, error) {
	if h.teamFigures == nil {
		return h.computeTeamFigures(ctx, team)
	}
	if f, ok := h.teamFigures.fresh(team, h.Now()); ok {
		return f, nil
	}
	compute := func() (any, error) {
		// A request that found the figures stale just before another
		// computation finished takes that one's result.
		if f, ok := h.teamFigures.fresh(team, h.Now()); ok {
			return f, nil
		}
		h.teamFigures.setLoading(team, true)
		defer h.teamFigures.setLoading(team, false)
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sharedLoadTimeout)
		defer cancel()
		f, err := h.computeTeamFigures(cctx, team)
		if err != nil || f.unsynced {
			return f, err
		}
		h.teamFigures.mu.Lock()
		h.teamFigures.byTeam[team] = f
		h.teamFigures.mu.Unlock()
		return f, nil
	}
	if f, ok := h.teamFigures.recent(team, h.Now()); ok {
		// Answered from the buffered channel nobody reads.
		h.teamFigures.group.DoChan(team, compute)
		return f, nil
	}
	v, err, _ := h.teamFigures.group.Do(team, compute)
	if err != nil {
		return teamFigures{}, err
	}
	return v.(teamFigures), nil
}

func (h *handler) computeTeamFigures(ctx context.Context, team string) (teamFigures, error) {
	now := h.Now()
	f := teamFigures{asOf: now}
	lf, err := h.ledgerFiguresOf(ctx, team, now)
	if err != nil {
		return teamFigures{}, err
	}
	f.month = lf.month

	// Waits of runs admitted in the last week: ended (ledger) and ongoing
	// (the cache's index of workloads holding quota, not every workload).
	pr, err := h.prices(ctx)
	if err != nil {
		return teamFigures{}, err
	}
	wls, err := h.Status.Jobs.NamespaceRunningWorkloads(naming.Namespace(team))
	if err != nil && !errors.Is(err, kube.ErrNotSynced) {
		return teamFigures{}, err
	}
	f.unsynced = err != nil
	dayAgo, weekAgo := now.Add(-24*time.Hour).UnixNano(), now.Add(-7*24*time.Hour).UnixNano()
	byFlavor := map[string][2][]float64{}
	add := func(flavor string, admitted int64, wait float64) {
		if admitted < weekAgo {
			return
		}
		w := byFlavor[flavor]
		w[1] = append(w[1], wait)
		if admitted >= dayAgo {
			w[0] = append(w[0], wait)
		}
		byFlavor[flavor] = w
	}
	for flavor, ws := range lf.waits {
		for _, w := range ws {
			add(flavor, w.admitted, w.wait)
		}
	}
	for _, wl := range wls {
		r, ok := cost.Ongoing(wl, now)
		if !ok {
			continue
		}
		add(r.Flavor, r.Admitted.UnixNano(), r.Wait().Seconds())
		// A running run has no outcome yet: it is neither succeeded nor failed.
		row := store.LedgerRow{GPUs: r.GPUs, AllocatedGPUHours: r.GPUHours()}
		row.CostUSD, row.USDPerHour = pr.of(r)
		f.running.Add(row)
	}
	for flavor, w := range byFlavor {
		f.waits = append(f.waits, waitStat{Flavor: flavor, DayRuns: len(w[0]), WeekRuns: len(w[1]),
			DayP50: secs(percentile(w[0], 0.5)), DayP95: secs(percentile(w[0], 0.95)),
			WeekP50: secs(percentile(w[1], 0.5)), WeekP95: secs(percentile(w[1], 0.95))})
	}
	slices.SortFunc(f.waits, func(a, b waitStat) int { return strings.Compare(a.Flavor, b.Flavor) })
	return f, nil
}

func secs(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func teamStatusProps(ts teamStatus) views.TeamStatusProps {
	p := views.TeamStatusProps{Team: ts.Team, Pending: ts.Queue.Pending, Admitted: ts.Queue.Admitted,
		LedgerCSV: "/teams/" + ts.Team + "/ledger.csv", MonthLabel: ts.Month.From.Format("January 2006"),
		Spend: spendView(ts.Month.Spend), Running: spendView(ts.Running), Unpriced: ts.Month.Unpriced,
		AsOf: ts.AsOf.UTC().Format("15:04:05")}
	switch {
	case errors.Is(ts.QueueErr, kube.ErrNotSynced):
		p.Error = "The portal is still reading the cluster; quota and queue figures appear in a moment. Reload the page."
	case ts.QueueErr != nil:
		p.Error = "This team has no ClusterQueue, so it has no quota."
	}
	p.Quota = quotaRows(ts.Queue)
	for _, w := range ts.Waits {
		p.Waits = append(p.Waits, views.WaitRow{Flavor: w.Flavor, DayRuns: w.DayRuns, WeekRuns: w.WeekRuns,
			DayP50: waitOrDash(w.DayP50, w.DayRuns), DayP95: waitOrDash(w.DayP95, w.DayRuns),
			WeekP50: waitOrDash(w.WeekP50, w.WeekRuns), WeekP95: waitOrDash(w.WeekP95, w.WeekRuns)})
	}
	s := ts.Month.Spend
	p.Hours = barChart(gpu.Bars([]string{"allocated", "useful", "idle"},
		[]float64{s.AllocatedGPUHours, s.UsefulGPUHours, s.IdleGPUHours},
		[]string{"chart-allocated", "chart-useful", "chart-idle"}, func(v float64) string { return hours(v) + " GPU-h" }), "hours-chart")
	p.SpendChart = barChart(gpu.Bars([]string{"spend", "failed", "idle"},
		[]float64{s.CostUSD.Float(), s.FailedCostUSD.Float(), s.IdleCostUSD.Float()},
		[]string{"chart-allocated", "chart-failed", "chart-idle"}, func(v float64) string { return money.FromFloat(v).String() }), "spend-chart")
	p.TopByCost = jobCostRows(ts.Month.TopByCost)
	p.TopByIdle = jobCostRows(ts.Month.TopByIdle)
	return p
}

// quotaRows are the queue's accelerator quotas, but those with nothing in
// them: Kueue needs every covered resource listed in every flavor, so a
// team with H100s in one pool also has rows of 0 H100s in the CPU pool and
// of 0 MIG slices in the H100 pool, which made most of the table. The
// home page's card leaves them out too (views.granted, which also keeps a
// row the team may borrow in: the queue summary here has no borrowing limit).
func quotaRows(q queue.QueueSummary) []views.QuotaUseRow {
	var out []views.QuotaUseRow
	for _, f := range q.Flavors {
		if !f.Accelerator || (f.Nominal == 0 && f.Used == 0 && f.Borrowed == 0 && f.Lent == 0) {
			continue
		}
		out = append(out, views.QuotaUseRow{Queue: q.ClusterQueue, Flavor: f.Flavor, Resource: f.Resource,
			Nominal: strconv.FormatInt(f.Nominal, 10), Used: strconv.FormatInt(f.Used, 10),
			Borrowed: strconv.FormatInt(f.Borrowed, 10), Lent: strconv.FormatInt(f.Lent, 10)})
	}
	return out
}

func waitOrDash(d time.Duration, n int) string {
	if n == 0 {
		return "–"
	}
	return wait(d)
}

func spendView(s cost.Spend) views.SpendView {
	v := views.SpendView{Runs: s.Runs, SucceededRuns: s.SucceededRuns, FailedRuns: s.FailedRuns,
		AllocatedHours: hours(s.AllocatedGPUHours), UsefulHours: hours(s.UsefulGPUHours), IdleHours: hours(s.IdleGPUHours),
		UnmeasuredHours: hours(s.UnmeasuredGPUHours), UnmeasuredCost: usd(s.UnmeasuredCostUSD),
		Cost: usd(s.CostUSD), FailedCost: usd(s.FailedCostUSD), IdleCost: usd(s.IdleCostUSD), CostPerSuccess: "–"}
	if s.SucceededRuns > 0 {
		v.CostPerSuccess = usd(s.CostPerSuccessUSD)
	}
	return v
}

func jobCostRows(js []cost.JobCost) []views.JobCostRow {
	out := make([]views.JobCostRow, 0, len(js))
	for _, j := range js {
		out = append(out, views.JobCostRow{Team: j.Team, Job: j.Job, Flavor: j.Flavor, Runs: j.Runs,
			GPUHours: hours(j.GPUHours), Cost: usd(j.CostUSD), Idle: usd(j.IdleUSD)})
	}
	return out
}
