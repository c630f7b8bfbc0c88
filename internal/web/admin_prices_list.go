package web

import (
	"net/http"
	"slices"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/store"
	"github.com/gantry-dev/gantry/views"
)

// adminPricesList shows every price, past, current and future, with the form.
func (h *handler) adminPricesList(c *gin.Context) {
	h.renderAdminPrices(c, http.StatusOK, views.PriceFormValues{EffectiveFrom: todayUTC(h.Now())}, nil)
}

func (h *handler) renderAdminPrices(c *gin.Context, status int, form views.PriceFormValues, problems []string) {
	ctx := c.Request.Context()
	prices, err := h.Catalog.Prices(ctx)
	if err != nil {
		h.fail(c, err)
		return
	}
	now := h.Now()
	p := views.AdminPricesProps{Form: form, Problems: problems}
	seen := map[string]bool{}
	addFlavor := func(flavor, resource string) {
		key := flavor + "|" + resource
		if !seen[key] {
			seen[key] = true
			p.Flavors = append(p.Flavors, views.Option{Value: key, Label: flavor + " · " + resource})
		}
	}
	if h.Quota != nil {
		flavors, err := h.Quota.Board.Flavors()
		if err != nil {
			h.Log.WarnContext(ctx, "list flavors", "err", err)
		}
		for _, f := range flavors {
			for _, r := range f.Resources {
				addFlavor(f.Flavor, r)
			}
		}
	}
	states := priceStates(prices, now)
	for i, pr := range prices {
		addFlavor(pr.Flavor, pr.Resource)
		p.Prices = append(p.Prices, views.PriceRow{Flavor: pr.Flavor, Resource: pr.Resource, USDPerHour: pr.USDPerHour.Float(),
			EffectiveFrom: pr.EffectiveFrom, State: states[i], SetBy: pr.SetBy})
	}
	slices.SortStableFunc(p.Flavors, func(a, b views.Option) int {
		if a.Value < b.Value {
			return -1
		}
		if a.Value > b.Value {
			return 1
		}
		return 0
	})
	h.render(c, status, views.AdminPricesPage(h.nav(c, "prices"), p))
}

// priceStates marks each price past, current or future at now; prices come
// newest effective date first per flavor and resource.
func priceStates(prices []store.GPUPrice, now time.Time) []string {
	out := make([]string, len(prices))
	current := map[string]bool{}
	for i, pr := range prices {
		key := pr.Flavor + "|" + pr.Resource
		out[i] = "past"
		switch {
		case pr.EffectiveFrom.After(now):
			out[i] = "future"
		case !current[key]:
			out[i], current[key] = "current", true
		}
	}
	return out
}
