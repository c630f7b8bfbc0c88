package web

import (
	"bytes"
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gantry-dev/gantry/internal/cost"
	"github.com/gantry-dev/gantry/internal/money"
	"github.com/gantry-dev/gantry/views"
)

// TestClusterWeeklyChartShowsEachWeeksFigures renders the cluster page's
// chart and reads back what a person sees: each bar's useful, idle and
// failed GPU-hours, its total, and bar heights in proportion.
func TestClusterWeeklyChartShowsEachWeeksFigures(t *testing.T) {
	w := func(d int) time.Time { return time.Date(2026, 11, d, 0, 0, 0, 0, time.UTC) }
	charts := weeklyCharts([]cost.TeamWeeks{{Team: "vision", Weeks: []cost.WeekHours{
		{Week: w(16), Useful: 12, Idle: 6, Failed: 2},
		{Week: w(23), Useful: 5, Idle: 0, Failed: 5},
	}}})
	var buf bytes.Buffer
	require.NoError(t, views.ClusterWeeklyCharts(charts).Render(context.Background(), &buf))
	doc, err := goquery.NewDocumentFromReader(&buf)
	require.NoError(t, err)

	type segment struct{ series, value string }
	bars := map[string][]segment{}
	heights := map[string]float64{}
	doc.Find(`[data-testid="weekly-vision"] [data-testid="stacked-bar"]`).Each(func(_ int, g *goquery.Selection) {
		label, _ := g.Attr("data-label")
		g.Find("rect").Each(func(_ int, r *goquery.Selection) {
			s, _ := r.Attr("data-series")
			v, _ := r.Attr("data-value")
			bars[label] = append(bars[label], segment{s, v})
			h, _ := r.Attr("height")
			f, err := strconv.ParseFloat(h, 64)
			require.NoError(t, err)
			heights[label] += f
		})
		assert.Contains(t, g.Text(), label)
	})
	assert.Equal(t, map[string][]segment{
		"Nov 16": {{"useful", "12.00 GPU-h"}, {"idle", "6.00 GPU-h"}, {"failed", "2.00 GPU-h"}},
		"Nov 23": {{"useful", "5.00 GPU-h"}, {"idle", "0.00 GPU-h"}, {"failed", "5.00 GPU-h"}},
	}, bars)
	assert.InDelta(t, 0.5, heights["Nov 23"]/heights["Nov 16"], 0.01, "10 GPU-hours stand half as tall as 20")
	text := doc.Find(`[data-testid="weekly-vision"]`).Text()
	assert.Contains(t, text, "20.00 GPU-h", "the first week's total")
	assert.Contains(t, text, "Nov 16: useful 12.00 GPU-h, idle 6.00 GPU-h, failed 2.00 GPU-h; Nov 23: useful 5.00 GPU-h, idle 0.00 GPU-h, failed 5.00 GPU-h.")
}

// TestTeamCostSectionSaysWhatAnAcceptedRunCost renders the team page's
// cost section from a month's figures.
func TestTeamCostSectionSaysWhatAnAcceptedRunCost(t *testing.T) {
	per, rented := 412*money.Dollar, 655*money.Dollar
	ta := cost.TeamAccounting{Month: cost.UnitCost{Month: "2026-11", UsefulUSD: 700 * money.Dollar, IdleUSD: 100 * money.Dollar,
		FailedUSD: 24 * money.Dollar, NetworkUSD: 0, TotalUSD: 824 * money.Dollar, AcceptedRuns: 2, AcceptedByRule: 1,
		CostPerAcceptedRunUSD: &per, RentedPerAcceptedRunUSD: &rented,
		Verdict: "This month an accepted run cost $412.00 here vs $655.00 rented: the cluster is cheaper."},
		Idle: cost.IdleReport{IdleGPUHours: 25, IdleUSD: 100 * money.Dollar,
			ByOwner:       []cost.IdleShare{{Name: "alice", GPUHours: 25, USD: 100 * money.Dollar}},
			FailedByCause: []cost.CauseCost{{Cause: "out-of-memory", Runs: 2, USD: 24 * money.Dollar}}}}
	ta.Trend = []cost.UnitCost{ta.Month}
	var buf bytes.Buffer
	require.NoError(t, views.TeamCostSection(views.Nav{}, teamCostView(ta, "vision", true)).Render(context.Background(), &buf))
	doc, err := goquery.NewDocumentFromReader(&buf)
	require.NoError(t, err)
	text := func(id string) string { return doc.Find(`[data-testid="` + id + `"]`).Text() }
	assert.Contains(t, text("per-accepted-run"), "$412.00 per accepted run (2 accepted, 1 of them by the team's rule; 0 rejected)")
	assert.Equal(t, "This month an accepted run cost $412.00 here vs $655.00 rented: the cluster is cheaper.", text("cost-verdict"))
	assert.Equal(t, "$700.00", text("term-useful"))
	assert.Equal(t, "$24.00", text("term-failed"))
	assert.Equal(t, "$824.00", text("term-total"))
	assert.Contains(t, text("endpoint-units"), "not counted yet")
	assert.Contains(t, text("idle-by-owner"), "alice")
	assert.Contains(t, text("cause-out-of-memory"), "$24.00")
	assert.Contains(t, text("reclaimed"), "not recorded yet")
	assert.Equal(t, 1, doc.Find(`[data-testid="rule-on"]`).Length(), "a lead may turn the rule on")
}

// TestClusterTeamsSectionSaysWhenNoRunHasEnded renders the cluster page's
// teams section on a fresh cluster (no run ended this month: a sentence,
// not a table of headers over nothing) and after a run of vision ended.
func TestClusterTeamsSectionSaysWhenNoRunHasEnded(t *testing.T) {
	render := func(p views.ClusterProps) *goquery.Selection {
		t.Helper()
		var buf bytes.Buffer
		require.NoError(t, views.ClusterPage(views.Nav{}, p).Render(context.Background(), &buf))
		doc, err := goquery.NewDocumentFromReader(&buf)
		require.NoError(t, err)
		return doc.Find(`[data-testid="team-spend"]`)
	}

	fresh := render(views.ClusterProps{MonthLabel: "December 2026"})
	require.Equal(t, 1, fresh.Length(), "the teams section is on the page")
	assert.Contains(t, fresh.Find(`[data-testid="team-spend-empty"]`).Text(), "No team's run has ended in December 2026 yet")
	assert.Zero(t, fresh.Find("table").Length(), "no table of headers over nothing")

	ended := render(views.ClusterProps{MonthLabel: "December 2026", Teams: []views.TeamSpendRow{{Team: "vision", SpendView: views.SpendView{Cost: "$12.00"}}}})
	assert.Zero(t, ended.Find(`[data-testid="team-spend-empty"]`).Length())
	assert.Contains(t, ended.Find(`[data-testid="team-vision"]`).Text(), "$12.00")
}
