package web

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// apiJobIdleUnexempt removes a job's exemption or extension.
func (h *handler) apiJobIdleUnexempt(c *gin.Context) {
	u, rec, err := h.jobRecord(c)
	if err != nil {
		h.fail(c, err)
		return
	}
	if !leads(u, rec.Team) {
		h.fail(c, errNotIdleLead)
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
