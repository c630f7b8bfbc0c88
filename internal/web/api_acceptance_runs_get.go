package web

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/auth"
)

// apiAcceptanceRunsGet is a run's report: the seven steps in order with
// status, figure and threshold, the run's cost and its verdict.
func (h *handler) apiAcceptanceRunsGet(c *gin.Context) {
	u, _ := auth.CurrentUser(c)
	id, err := pathID(c)
	if err != nil {
		h.apiFail(c, err)
		return
	}
	r, err := h.Acceptance.Run(c.Request.Context(), acceptancePerson(c, u), id)
	if err != nil {
		h.apiFail(c, err)
		return
	}
	c.JSON(http.StatusOK, r)
}
