package web

import (
	"fmt"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/views"
)

// jobResume resumes a job as the user and returns to its page.
func (h *handler) jobResume(c *gin.Context) {
	u, rec, ok := h.jobOf(c)
	if !ok {
		return
	}
	if err := h.Launcher.Resume(c.Request.Context(), actorOf(c, u), rec.Team, rec.Name); err != nil {
		h.fail(c, err)
		return
	}
	h.addFlash(c, views.FlashSuccess, fmt.Sprintf("Resuming %s. It queues for a GPU again.", rec.Name))
	redirectSeeOther(c, jobURL(rec.Team, rec.Name))
}
