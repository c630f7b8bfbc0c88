package web

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// apiJobsResume resumes a stopped notebook or endpoint as the caller; it
// queues for a GPU again.
func (h *handler) apiJobsResume(c *gin.Context) {
	u, rec, ok := h.jobOf(c)
	if !ok {
		return
	}
	if err := h.Launcher.Resume(c.Request.Context(), actorOf(c, u), rec.Team, rec.Name); err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusAccepted, apiJobAccepted{Name: rec.Name, Team: rec.Team, URL: h.PublicURL.String() + jobURL(rec.Team, rec.Name)})
}
