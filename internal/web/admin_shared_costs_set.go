package web

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/internal/cost"
	"github.com/gantry-dev/gantry/internal/problem"
	"github.com/gantry-dev/gantry/views"
)

// adminSharedCostsSet stores a pool's shared costs for a month.
func (h *handler) adminSharedCostsSet(c *gin.Context) {
	acc, err := h.accounting()
	if err != nil {
		h.fail(c, err)
		return
	}
	u, _ := auth.CurrentUser(c)
	month := c.PostForm(views.FieldCostMonth)
	form := views.SharedCostForm{Pool: c.PostForm(views.FieldCostPool), Network: c.PostForm(views.FieldCostNetwork),
		Storage: c.PostForm(views.FieldCostStorage), Support: c.PostForm(views.FieldCostSupport), Operations: c.PostForm(views.FieldCostOperations)}
	sc, err := acc.SetSharedCost(c.Request.Context(), accountingActor(c, u), cost.SharedCostInput{Month: month, Pool: form.Pool,
		NetworkUSD: form.Network, StorageUSD: form.Storage, SupportUSD: form.Support, OperationsUSD: form.Operations})
	var invalid problem.Fields
	if errors.As(err, &invalid) {
		h.renderSharedCosts(c, http.StatusUnprocessableEntity, month, invalid.Sentences(), &form, nil)
		return
	}
	if err != nil {
		h.fail(c, err)
		return
	}
	h.addFlash(c, views.FlashSuccess, fmt.Sprintf("%s carries %s of shared costs in %s, shared by its teams' GPU-hours.",
		sc.Pool, sc.Total(), cost.MonthKey(sc.Month)))
	redirectSeeOther(c, "/admin/shared-costs?month="+cost.MonthKey(sc.Month))
}
