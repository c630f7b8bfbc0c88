package web

import (
	"fmt"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/views"
)

// jobIdleUnexempt removes a job's exemption or extension from idle reclaim.
func (h *handler) jobIdleUnexempt(c *gin.Context) {
	u, rec, ok := h.jobOf(c, idleLead)
	if !ok {
		return
	}
	if err := h.Idle.Unexempt(c.Request.Context(), reclaimActor(c, u), rec); err != nil {
		h.fail(c, err)
		return
	}
	h.addFlash(c, views.FlashSuccess, fmt.Sprintf("%s is subject to idle reclaim again.", rec.Name))
	redirectSeeOther(c, jobURL(rec.Team, rec.Name))
}
