package web

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/catalog/catalogadmin"
)

// apiPriceBody is the body of POST /api/v1/prices.
type apiPriceBody struct {
	Flavor   string `json:"flavor"`
	Resource string `json:"resource"`
	// USDPerHour is a decimal string, for example "2.50".
	USDPerHour string `json:"usdPerHour"`
	// EffectiveFrom is a date, YYYY-MM-DD, in UTC: today or later.
	EffectiveFrom string `json:"effectiveFrom"`
}

// apiPricesSet stores a price per GPU-hour from its effective date on.
func (h *handler) apiPricesSet(c *gin.Context) {
	var body apiPriceBody
	if err := bindJSON(c, &body); err != nil {
		h.apiBadBody(c, err, `Send a JSON object: {"flavor","resource","usdPerHour": "2.50","effectiveFrom": "YYYY-MM-DD"}.`)
		return
	}
	p, err := h.Catalog.SetPrice(c.Request.Context(), catalogActor(c), catalogadmin.PriceForm{Flavor: body.Flavor, Resource: body.Resource,
		USDPerHour: body.USDPerHour, EffectiveFrom: body.EffectiveFrom})
	if err != nil {
		h.apiFail(c, err)
		return
	}
	c.JSON(http.StatusCreated, apiPriceOf(p))
}
