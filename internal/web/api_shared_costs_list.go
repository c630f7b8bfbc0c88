package web

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// apiSharedCostsList is the shared costs entered for a month
// (?month=2026-11, default this month) and the comparison in effect.
func (h *handler) apiSharedCostsList(c *gin.Context) {
	acc, err := h.accounting()
	if err != nil {
		h.fail(c, err)
		return
	}
	month, err := h.monthParam(c)
	if err != nil {
		h.apiInvalid(c, map[string]string{"month": "Give the month as YYYY-MM, for example 2026-11."})
		return
	}
	page, err := acc.SharedCosts(c.Request.Context(), month)
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, page)
}
