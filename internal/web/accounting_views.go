package web

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/a-h/templ"
	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/internal/cost"
	"github.com/gantry-dev/gantry/internal/gpu"
	"github.com/gantry-dev/gantry/internal/money"
	"github.com/gantry-dev/gantry/internal/store"
	"github.com/gantry-dev/gantry/views"
)

// weeklyChartWeeks is how many weeks the cluster page's chart shows.
const weeklyChartWeeks = 6

// teamCostProps is the team page's cost section; nil without accounting
// or when it cannot be computed (the rest of the page still shows).
func (h *handler) teamCostProps(c *gin.Context, team string) *views.TeamCostProps {
	acc, err := h.accounting()
	if err != nil {
		return nil
	}
	ta, err := acc.Team(c.Request.Context(), team, h.Now(), cost.TrendMonths)
	if err != nil {
		h.Log.WarnContext(c.Request.Context(), "team cost per accepted unit unavailable", "team", team, "err", err)
		return nil
	}
	u, _ := auth.CurrentUser(c)
	return teamCostView(ta, team, u != nil && leads(u, team))
}

func perUnit(v *money.USD) string {
	if v == nil {
		return "–"
	}
	return v.String()
}

// teamCostView puts a team's accounting on its page; mayChangeRule shows
// the rule's button.
func teamCostView(ta cost.TeamAccounting, team string, mayChangeRule bool) *views.TeamCostProps {
	m := ta.Month
	month, _ := cost.ParseMonth(m.Month)
	p := &views.TeamCostProps{Month: m.Month, MonthLabel: month.Format("January 2006"), Total: usd(m.TotalUSD),
		AcceptedRuns: m.AcceptedRuns, AcceptedByRule: m.AcceptedByRule, RejectedRuns: m.RejectedRuns,
		PerAcceptedRun: perUnit(m.CostPerAcceptedRunUSD), Verdict: m.Verdict, RuleOn: ta.Rule.AcceptSucceeded,
		APIURL: "GET /api/v1/teams/" + team + "/cost?month=" + m.Month}
	p.Terms = []views.CostTerm{
		{Name: "GPU compute, useful", Amount: usd(m.UsefulUSD), TestID: "term-useful"},
		{Name: "Idle GPUs", Amount: usd(m.IdleUSD), TestID: "term-idle"},
		{Name: "Unmeasured GPU time (no samples)", Amount: usd(m.UnmeasuredUSD), TestID: "term-unmeasured"},
		{Name: "Failed and preempted runs", Amount: usd(m.FailedUSD), TestID: "term-failed"},
		{Name: "Network (share)", Amount: usd(m.NetworkUSD), TestID: "term-network"},
		{Name: "Storage (share)", Amount: usd(m.StorageUSD), TestID: "term-storage"},
		{Name: "Support (share)", Amount: usd(m.SupportUSD), TestID: "term-support"},
		{Name: "Operations (share)", Amount: usd(m.OperationsUSD), TestID: "term-operations"},
	}
	switch {
	case !ta.EndpointsCounted:
		p.EndpointLine = fmt.Sprintf("Inference endpoints cost %s; their served requests are not counted yet, so they have no cost per unit.", usd(m.EndpointCostUSD))
	case m.EndpointUnit == "":
		p.EndpointLine = fmt.Sprintf("Inference endpoints cost %s and served no requests this month.", usd(m.EndpointCostUSD))
	default:
		p.EndpointLine = fmt.Sprintf("Inference endpoints cost %s for %.2f × %s served: %s per %s.", usd(m.EndpointCostUSD),
			m.EndpointUnits, m.EndpointUnit, perUnit(m.CostPerEndpointUnitUSD), m.EndpointUnit)
	}
	for _, t := range ta.Trend {
		ep := perUnit(t.CostPerEndpointUnitUSD)
		if t.EndpointUnit != "" {
			ep += " per " + t.EndpointUnit
		}
		p.Trend = append(p.Trend, views.TrendRow{Month: t.Month, Total: usd(t.TotalUSD), Accepted: strconv.Itoa(t.AcceptedRuns),
			PerAcceptedRun: perUnit(t.CostPerAcceptedRunUSD), PerEndpointUnit: ep})
	}
	p.RuleLine = "Runs count as accepted when a person accepts them on the job page."
	if ta.Rule.AcceptSucceeded && ta.Rule.Since != nil {
		p.RuleLine = fmt.Sprintf("Succeeded runs are accepted automatically (since %s, set by %s) unless someone rejects them.",
			ta.Rule.Since.UTC().Format("2006-01-02"), ta.Rule.SetBy)
	}
	if mayChangeRule {
		p.RuleURL = "/teams/" + team + "/acceptance-rule"
	}
	idle := ta.Idle
	p.Idle = views.IdleProps{IdleHours: hours(idle.IdleGPUHours), IdleCost: usd(idle.IdleUSD),
		ByJob: idleRows(idle.ByJob), ByOwner: idleRows(idle.ByOwner), ByKind: idleRows(idle.ByKind)}
	if ta.ReclaimsKnown {
		p.Idle.Reclaimed = fmt.Sprintf("Idle reclaim stopped or scaled down %d jobs this month, freeing %d GPUs after %s idle GPU-hours.",
			len(idle.Reclaimed), idle.ReclaimedGPUs, hours(idle.ReclaimedGPUHours))
		for _, r := range idle.Reclaimed {
			p.Idle.ReclaimedRows = append(p.Idle.ReclaimedRows, views.IdleRow{Name: r.Job + " (" + r.Action + ")", Hours: hours(r.GPUHours), Cost: usd(r.USD)})
		}
	} else {
		p.Idle.Reclaimed = "Reclaimed GPU-hours are not recorded yet in this portal."
	}
	for _, cc := range idle.FailedByCause {
		p.Idle.FailedByCause = append(p.Idle.FailedByCause, views.CauseRow{Cause: cc.Cause, Runs: cc.Runs, Cost: usd(cc.USD)})
	}
	return p
}

func idleRows(ss []cost.IdleShare) []views.IdleRow {
	out := make([]views.IdleRow, 0, len(ss))
	for _, s := range ss {
		out = append(out, views.IdleRow{Name: s.Name, Hours: hours(s.GPUHours), Cost: usd(s.USD)})
	}
	return out
}

// verdictProps is a job page's result section; nil without accounting.
func (h *handler) verdictProps(c *gin.Context, rec store.Launch) *views.VerdictProps {
	acc, err := h.accounting()
	if err != nil {
		return nil
	}
	res, err := acc.JobResult(c.Request.Context(), rec.Team, rec.Namespace, rec.Name, rec.Kind)
	if err != nil {
		h.Log.WarnContext(c.Request.Context(), "job result unavailable", "job", rec.Namespace+"/"+rec.Name, "err", err)
		return nil
	}
	v := &views.VerdictProps{ByRule: res.ByRule}
	if res.Verdict != nil {
		v.Verdict, v.Note, v.DecidedBy, v.DecidedAt = res.Verdict.Verdict, res.Verdict.Note, res.Verdict.DecidedBy, stamp(res.Verdict.DecidedAt)
	}
	if u, ok := auth.CurrentUser(c); ok && mayJudge(u, rec) {
		v.URL = jobURL(rec.Team, rec.Name) + "/verdict"
	}
	return v
}

// clusterWeeklyCharts is the cluster page's weekly chart per team; nil
// without accounting.
func (h *handler) clusterWeeklyCharts(c *gin.Context) templ.Component {
	acc, err := h.accounting()
	if err != nil {
		return nil
	}
	tw, err := acc.Weeks(c.Request.Context(), weeklyChartWeeks)
	if err != nil {
		h.Log.WarnContext(c.Request.Context(), "weekly GPU-hours unavailable", "err", err)
		return nil
	}
	return h.weeklyCharts.of(c.Request.Context(), tw)
}

// renderedWeeks keeps the cluster page's weekly charts rendered for the
// figures they were drawn from. The figures are shared by every view
// until the ledger changes (sharedAccounting: the same slice, never
// modified), yet laying out and rendering their bars again took 370 of the
// 975 MB the page allocated in the 39th load run.
type renderedWeeks struct {
	mu   sync.Mutex
	from *cost.TeamWeeks // the figures' first team; nil keeps nothing
	n    int
	html string
}

// of is the charts of tw, rendered once for each figures read.
func (r *renderedWeeks) of(ctx context.Context, tw []cost.TeamWeeks) templ.Component {
	if len(tw) == 0 {
		return views.ClusterWeeklyCharts(nil)
	}
	r.mu.Lock()
	html := r.html
	kept := r.from == &tw[0] && r.n == len(tw)
	r.mu.Unlock()
	if !kept {
		charts := views.ClusterWeeklyCharts(weeklyCharts(tw))
		var b strings.Builder
		if err := charts.Render(ctx, &b); err != nil {
			return charts
		}
		html = b.String()
		r.mu.Lock()
		r.from, r.n, r.html = &tw[0], len(tw), html
		r.mu.Unlock()
	}
	return templ.Raw(html)
}

// weeklyCharts lays out each team's weeks as stacked bars: useful, idle, failed.
func weeklyCharts(tw []cost.TeamWeeks) []views.TeamWeeksChart {
	out := make([]views.TeamWeeksChart, 0, len(tw))
	for _, t := range tw {
		labels := make([]string, 0, len(t.Weeks))
		values := make([][]float64, 0, len(t.Weeks))
		for _, w := range t.Weeks {
			labels = append(labels, w.Week.Format("Jan 2"))
			values = append(values, []float64{w.Useful, w.Idle, w.Failed})
		}
		g := gpu.StackedBars(labels, []string{"useful", "idle", "failed"}, []string{"chart-useful", "chart-idle", "chart-failed"},
			values, func(v float64) string { return hours(v) + " GPU-h" })
		chart := views.StackedBarChart{Width: g.Width, Height: g.Height, Summary: g.Summary, TestID: "weekly-" + t.Team}
		for _, b := range g.Bars {
			vb := views.StackedChartBar{Label: b.Label, Total: b.Total, X: b.X, W: b.W, TotalY: b.TotalY}
			for _, s := range b.Segments {
				vb.Segments = append(vb.Segments, views.ChartSegment{Series: s.Series, Value: s.Value, Class: s.Class, Y: s.Y, H: s.H})
			}
			chart.Bars = append(chart.Bars, vb)
		}
		out = append(out, views.TeamWeeksChart{Team: t.Team, Chart: chart})
	}
	return out
}
