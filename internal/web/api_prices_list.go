package web

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/store"
)

// apiPrice is a price per GPU-hour from its effective time on. USDPerHour
// is an exact decimal string.
type apiPrice struct {
	Flavor        string    `json:"flavor"`
	Resource      string    `json:"resource"`
	USDPerHour    string    `json:"usdPerHour"`
	EffectiveFrom time.Time `json:"effectiveFrom"`
	// State is past, current or future.
	State string `json:"state,omitempty"`
	SetBy string `json:"setBy"`
}

func apiPriceOf(p store.GPUPrice) apiPrice {
	return apiPrice{Flavor: p.Flavor, Resource: p.Resource, USDPerHour: p.USDPerHour.Decimal(), EffectiveFrom: p.EffectiveFrom, SetBy: p.SetBy}
}

// apiPriceList is every price, past, current and future.
type apiPriceList struct {
	Prices []apiPrice `json:"prices"`
}

// apiPricesList lists every price, newest effective date first per pool,
// each marked past, current or future as the prices page marks them.
func (h *handler) apiPricesList(c *gin.Context) {
	prices, err := h.Catalog.Prices(c.Request.Context())
	if err != nil {
		h.fail(c, err)
		return
	}
	states := priceStates(prices, h.Now())
	out := apiPriceList{Prices: make([]apiPrice, 0, len(prices))}
	for i, pr := range prices {
		p := apiPriceOf(pr)
		p.State = states[i]
		out.Prices = append(out.Prices, p)
	}
	c.JSON(http.StatusOK, out)
}
