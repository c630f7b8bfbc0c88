package web

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/cost"
)

// apiClusterWeeks is the answer of GET /api/v1/cluster/weekly-hours.
type apiClusterWeeks struct {
	Teams []cost.TeamWeeks `json:"teams"`
}

// apiClusterWeekly is the cluster page's chart as figures: every team's
// useful, idle and failed GPU-hours per week.
func (h *handler) apiClusterWeekly(c *gin.Context) {
	acc, err := h.accounting()
	if err != nil {
		h.fail(c, err)
		return
	}
	weeks, err := acc.Weeks(c.Request.Context(), weeklyChartWeeks)
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, apiClusterWeeks{Teams: weeks})
}
