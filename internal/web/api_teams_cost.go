package web

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/cost"
)

// apiTeamsCost is the team page's cost section: a month's cost per
// accepted unit with the guide's terms, the trend, the comparison and why
// GPUs were idle (?month=2026-11, default this month).
func (h *handler) apiTeamsCost(c *gin.Context) {
	acc, err := h.accounting()
	if err != nil {
		h.fail(c, err)
		return
	}
	_, team, ok := h.teamOf(c)
	if !ok {
		return
	}
	month, err := h.monthParam(c)
	if err != nil {
		h.apiInvalid(c, map[string]string{"month": "Give the month as YYYY-MM, for example 2026-11."})
		return
	}
	ta, err := acc.Team(c.Request.Context(), team, month, cost.TrendMonths)
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, ta)
}
