package web

import (
	"fmt"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/views"
)

// jobStop stops a job as the user and returns to its page.
func (h *handler) jobStop(c *gin.Context) {
	u, rec, ok := h.jobOf(c)
	if !ok {
		return
	}
	if err := h.Launcher.Stop(c.Request.Context(), actorOf(c, u), rec.Team, rec.Name); err != nil {
		h.fail(c, err)
		return
	}
	h.addFlash(c, views.FlashSuccess, fmt.Sprintf("Stopped %s. Its workspace is kept; resume it when you need it.", rec.Name))
	redirectSeeOther(c, jobURL(rec.Team, rec.Name))
}
