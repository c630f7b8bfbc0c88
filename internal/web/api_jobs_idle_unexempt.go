package web

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// apiJobIdleUnexempt removes a job's exemption or extension.
func (h *handler) apiJobIdleUnexempt(c *gin.Context) {
	u, rec, ok := h.jobOf(c, idleLead)
	if !ok {
		return
	}
	if err := h.Idle.Unexempt(c.Request.Context(), reclaimActor(c, u), rec); err != nil {
		h.fail(c, err)
		return
	}
	b, err := h.apiJobIdleOf(c.Request.Context(), rec)
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, b)
}
