package web

import (
	"fmt"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/views"
)

// jobIdleKeep holds an idle notebook for its policy's extension ("keep it
// running") and returns to its page.
func (h *handler) jobIdleKeep(c *gin.Context) {
	u, rec, ok := h.jobOf(c)
	if !ok {
		return
	}
	until, err := h.Idle.Keep(c.Request.Context(), reclaimActor(c, u), rec)
	if err != nil {
		h.fail(c, err)
		return
	}
	h.addFlash(c, views.FlashSuccess, fmt.Sprintf("%s keeps running until %s. If its GPUs are still idle then, you will be warned again.",
		rec.Name, until.UTC().Format("15:04 UTC")))
	redirectSeeOther(c, jobURL(rec.Team, rec.Name))
}
