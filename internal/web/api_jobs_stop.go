package web

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// apiJobAccepted is the answer to a job action the cluster carries out
// next; read the job's phase to follow it.
type apiJobAccepted struct {
	Name string `json:"name"`
	Team string `json:"team"`
	URL  string `json:"url"`
}

// apiJobsStop stops a notebook or endpoint as the caller; its workspace is kept.
func (h *handler) apiJobsStop(c *gin.Context) {
	u, rec, ok := h.jobOf(c)
	if !ok {
		return
	}
	if err := h.Launcher.Stop(c.Request.Context(), actorOf(c, u), rec.Team, rec.Name); err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusAccepted, apiJobAccepted{Name: rec.Name, Team: rec.Team, URL: h.PublicURL.String() + jobURL(rec.Team, rec.Name)})
}
