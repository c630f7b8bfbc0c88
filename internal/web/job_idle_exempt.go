package web

import (
	"fmt"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/views"
)

// jobIdleExempt exempts a job from idle reclaim with a lead's reason.
func (h *handler) jobIdleExempt(c *gin.Context) {
	u, rec, ok := h.jobOf(c, idleLead)
	if !ok {
		return
	}
	if err := h.Idle.Exempt(c.Request.Context(), reclaimActor(c, u), rec, c.PostForm(views.FieldIdleReason)); err != nil {
		h.fail(c, err)
		return
	}
	h.addFlash(c, views.FlashSuccess, fmt.Sprintf("%s is exempt from idle reclaim.", rec.Name))
	redirectSeeOther(c, jobURL(rec.Team, rec.Name))
}
