package web

import (
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/internal/kube"
	"github.com/gantry-dev/gantry/views"
)

// jobsList lists the jobs of the user's teams from the cluster cache.
func (h *handler) jobsList(c *gin.Context) {
	u, _ := auth.CurrentUser(c)
	p := views.JobsProps{}
	for _, team := range teamNames(u) {
		sts, err := h.Jobs.TeamStatuses(team)
		if errors.Is(err, kube.ErrNotSynced) {
			p.Error = "The portal is still reading the cluster; jobs appear in a moment. Reload the page."
			break
		}
		if err != nil {
			h.fail(c, err)
			return
		}
		for _, s := range sts {
			p.Jobs = append(p.Jobs, views.JobRow{Team: team, Name: s.Name, Kind: string(s.Kind), Owner: s.Owner, Template: s.Template,
				Phase: s.Phase, Pool: s.Pool, URL: jobURL(team, s.Name)})
		}
	}
	h.render(c, http.StatusOK, views.JobsPage(h.nav(c, "jobs"), p))
}
