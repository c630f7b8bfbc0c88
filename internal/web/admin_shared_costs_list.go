package web

import (
	"net/http"
	"slices"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/cost"
	"github.com/gantry-dev/gantry/internal/money"
	"github.com/gantry-dev/gantry/views"
)

// adminSharedCostsList is the admin's page of a month's shared costs per
// pool and the comparison with an alternative (?month=2026-11).
func (h *handler) adminSharedCostsList(c *gin.Context) {
	month, err := h.monthParam(c)
	if err != nil {
		month = cost.MonthStart(h.Now())
	}
	h.renderSharedCosts(c, http.StatusOK, cost.MonthKey(month), nil, nil, nil)
}

// renderSharedCosts renders the page for month; a refused form keeps what was sent.
func (h *handler) renderSharedCosts(c *gin.Context, status int, month string, problems []string, form *views.SharedCostForm, cmp *views.ComparisonForm) {
	acc, err := h.accounting()
	if err != nil {
		h.fail(c, err)
		return
	}
	m, err := cost.ParseMonth(month)
	if err != nil {
		m = cost.MonthStart(h.Now())
	}
	page, err := acc.SharedCosts(c.Request.Context(), m)
	if err != nil {
		h.fail(c, err)
		return
	}
	p := views.SharedCostsProps{Month: page.Month, Problems: problems}
	if h.Status.Pools != nil {
		for _, rf := range h.Status.Pools.ResourceFlavors() {
			p.Pools = append(p.Pools, rf.Name)
		}
		slices.Sort(p.Pools)
	}
	for _, sc := range page.Costs {
		p.Costs = append(p.Costs, views.SharedCostRow{Pool: sc.Pool, Network: usd(sc.NetworkUSD), Storage: usd(sc.StorageUSD),
			Support: usd(sc.SupportUSD), Operations: usd(sc.OperationsUSD), Total: usd(sc.Total()), SetBy: sc.SetBy})
	}
	if form != nil {
		p.Form = *form
	}
	if cmp != nil {
		p.Comparison = *cmp
	}
	p.Comparison.InEffect = "No alternative entered for this month: the team pages show no comparison."
	if in := page.Comparison; in != nil {
		p.Comparison.InEffect = "In effect since " + cost.MonthKey(in.Month) + ": " + comparisonWords(in.Label, in.RentalUSDPerGPUHour, in.APIUSDPerMillionTokens) + "."
		if cmp == nil {
			p.Comparison.Label = in.Label
			if in.RentalUSDPerGPUHour != nil {
				p.Comparison.Rental = in.RentalUSDPerGPUHour.Decimal()
			}
			if in.APIUSDPerMillionTokens != nil {
				p.Comparison.API = in.APIUSDPerMillionTokens.Decimal()
			}
		}
	}
	h.render(c, status, views.AdminSharedCostsPage(h.nav(c, "cluster"), p))
}

func comparisonWords(label string, rental, api *money.USD) string {
	out := label
	if out == "" {
		out = "the alternative"
	}
	if rental != nil {
		out += ", " + rental.String() + " per GPU-hour rented"
	}
	if api != nil {
		out += ", " + api.String() + " per million tokens from a model API"
	}
	return out
}
