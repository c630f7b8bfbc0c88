package web

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/problem"
	"github.com/gantry-dev/gantry/views"
)

// teamsAdminUpdate saves a team's groups, ceilings and cost center and
// re-applies its cluster objects (its quota is kept).
func (h *handler) teamsAdminUpdate(c *gin.Context) {
	f, vf := h.parseTeamForm(c)
	f.Name = c.Param("name")
	if len(vf.Errors) > 0 {
		h.renderTeamEdit(c, http.StatusUnprocessableEntity, vf)
		return
	}
	_, err := h.Quota.Teams.Update(c.Request.Context(), teamActor(c), f)
	h.teamsChanged()
	var verr problem.Fields
	if errors.As(err, &verr) {
		vf.Errors = verr
		h.renderTeamEdit(c, http.StatusUnprocessableEntity, vf)
		return
	}
	if err != nil {
		h.fail(c, err)
		return
	}
	h.addFlash(c, views.FlashSuccess, fmt.Sprintf("Team %s saved.", f.Name))
	redirectSeeOther(c, "/admin/teams/"+f.Name)
}
