package web

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/acceptance"
	"github.com/gantry-dev/gantry/internal/auth"
)

// apiAcceptanceRunsList is a pool's history of runs (?pool=), newest first,
// the runs the caller may read.
func (h *handler) apiAcceptanceRunsList(c *gin.Context) {
	u, _ := auth.CurrentUser(c)
	runs, err := h.Acceptance.History(c.Request.Context(), acceptancePerson(c, u), c.Query("pool"), historyLimit)
	if err != nil {
		h.apiFail(c, err)
		return
	}
	if runs == nil {
		runs = []acceptance.Report{}
	}
	c.JSON(http.StatusOK, apiAcceptanceRunList{Runs: runs})
}
