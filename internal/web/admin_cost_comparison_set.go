package web

import (
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/internal/cost"
	"github.com/gantry-dev/gantry/internal/problem"
	"github.com/gantry-dev/gantry/views"
)

// adminCostComparisonSet stores the alternative the cluster is compared
// with, from a month on.
func (h *handler) adminCostComparisonSet(c *gin.Context) {
	acc, err := h.accounting()
	if err != nil {
		h.fail(c, err)
		return
	}
	u, _ := auth.CurrentUser(c)
	month := c.PostForm(views.FieldCostMonth)
	form := views.ComparisonForm{Label: c.PostForm(views.FieldCostLabel), Rental: c.PostForm(views.FieldCostRental), API: c.PostForm(views.FieldCostAPI)}
	cmp, err := acc.SetComparison(c.Request.Context(), accountingActor(c, u), cost.ComparisonInput{Month: month, Label: form.Label,
		RentalUSDPerGPUHour: form.Rental, APIUSDPerMillionTokens: form.API})
	var invalid problem.Fields
	if errors.As(err, &invalid) {
		h.renderSharedCosts(c, http.StatusUnprocessableEntity, month, invalid.Sentences(), nil, &form)
		return
	}
	if err != nil {
		h.fail(c, err)
		return
	}
	h.addFlash(c, views.FlashSuccess, "From "+cost.MonthKey(cmp.Month)+" on, team pages compare with "+
		comparisonWords(cmp.Label, cmp.RentalUSDPerGPUHour, cmp.APIUSDPerMillionTokens)+".")
	redirectSeeOther(c, "/admin/shared-costs?month="+cost.MonthKey(cmp.Month))
}
