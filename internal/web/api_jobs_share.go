package web

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/proxy"
)

// apiShareBody is the body of POST /api/v1/teams/{team}/jobs/{name}/share.
type apiShareBody struct {
	Shared *bool `json:"shared"`
}

// apiNotebookShare is a notebook's sharing after the change.
type apiNotebookShare struct {
	Team    string `json:"team"`
	Name    string `json:"name"`
	Shared  bool   `json:"shared"`
	OpenURL string `json:"openUrl"`
}

// apiJobsShare shares the caller's notebook with its team or takes that
// back, as the job page's share button does.
func (h *handler) apiJobsShare(c *gin.Context) {
	u, rec, ok := h.jobOf(c, notebook)
	if !ok {
		return
	}
	var body apiShareBody
	if err := bindJSON(c, &body); err != nil || body.Shared == nil {
		h.apiBadBody(c, err, `Send a JSON object: {"shared": true} or {"shared": false}.`)
		return
	}
	actor := proxy.Actor{Username: u.Username, IP: c.ClientIP(), Via: u.Via()}
	if err := h.Proxy.Access.SetShared(c.Request.Context(), actor, rec.Team, rec.Name, rec.Owner, *body.Shared); err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, apiNotebookShare{Team: rec.Team, Name: rec.Name, Shared: *body.Shared, OpenURL: h.PublicURL.String() + notebookOpenURL(rec.Team, rec.Name)})
}
