package web

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// apiScaleBody is the body of POST /api/v1/teams/{team}/jobs/{name}/scale.
type apiScaleBody struct {
	Replicas int `json:"replicas"`
}

// apiJobsScale sets an inference endpoint's replicas within its range.
func (h *handler) apiJobsScale(c *gin.Context) {
	u, rec, ok := h.jobOf(c)
	if !ok {
		return
	}
	var body apiScaleBody
	if err := bindJSON(c, &body); err != nil {
		h.apiBadBody(c, err, `Send a JSON object: {"replicas": <a whole number within the endpoint's range>}.`)
		return
	}
	if err := h.Launcher.Scale(c.Request.Context(), actorOf(c, u), rec.Team, rec.Name, body.Replicas); err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusAccepted, apiJobAccepted{Name: rec.Name, Team: rec.Team, URL: h.PublicURL.String() + jobURL(rec.Team, rec.Name)})
}
