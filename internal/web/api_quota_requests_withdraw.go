package web

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/auth"
)

// apiQuotaRequestsWithdraw withdraws the caller's own open request.
func (h *handler) apiQuotaRequestsWithdraw(c *gin.Context) {
	u, _ := auth.CurrentUser(c)
	id, err := pathID(c)
	if err != nil {
		h.fail(c, err)
		return
	}
	r, err := h.Quota.Workflow.Withdraw(c.Request.Context(), quotaActor(c, u), id)
	if err != nil {
		h.apiFail(c, err)
		return
	}
	c.JSON(http.StatusOK, apiQuotaRequestOf(r))
}
