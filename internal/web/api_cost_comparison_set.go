package web

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/internal/cost"
)

// apiCostComparisonBody is the body of PUT /api/v1/admin/cost-comparison:
// prices as exact decimal strings, either or both.
type apiCostComparisonBody struct {
	Month                  string `json:"month"`
	Label                  string `json:"label,omitempty"`
	RentalUSDPerGPUHour    string `json:"rentalUsdPerGpuHour,omitempty"`
	APIUSDPerMillionTokens string `json:"apiUsdPerMillionTokens,omitempty"`
}

// apiCostComparisonSet stores the alternative the cluster is compared with
// from a month on, as the admin page does.
func (h *handler) apiCostComparisonSet(c *gin.Context) {
	acc, err := h.accounting()
	if err != nil {
		h.fail(c, err)
		return
	}
	u, _ := auth.CurrentUser(c)
	var body apiCostComparisonBody
	if err := bindJSON(c, &body); err != nil {
		h.apiBadBody(c, err, `Send a JSON object: {"month": "2026-11", "label": "<what it is>", "rentalUsdPerGpuHour": "6.50", "apiUsdPerMillionTokens": "3.00"}.`)
		return
	}
	cmp, err := acc.SetComparison(c.Request.Context(), accountingActor(c, u), cost.ComparisonInput{Month: body.Month, Label: body.Label,
		RentalUSDPerGPUHour: body.RentalUSDPerGPUHour, APIUSDPerMillionTokens: body.APIUSDPerMillionTokens})
	if err != nil {
		h.apiFail(c, err)
		return
	}
	c.JSON(http.StatusOK, cmp)
}
