package web

import (
	"errors"
	"fmt"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/views"
)

// jobDelete deletes a job as the user and returns to the jobs list.
func (h *handler) jobDelete(c *gin.Context) {
	u, rec, ok := h.jobOf(c)
	if !ok {
		return
	}
	if err := h.Launcher.Delete(c.Request.Context(), actorOf(c, u), rec.Team, rec.Name); err != nil {
		h.Log.WarnContext(c.Request.Context(), "delete job", "job", rec.Namespace+"/"+rec.Name, "cause", errors.Unwrap(err))
		h.fail(c, err)
		return
	}
	h.addFlash(c, views.FlashSuccess, fmt.Sprintf("Deleted %s.", rec.Name))
	redirectSeeOther(c, "/jobs")
}
