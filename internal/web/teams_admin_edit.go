package web

import (
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/views"
)

// teamsAdminEdit shows a team's edit form.
func (h *handler) teamsAdminEdit(c *gin.Context) {
	ctx := c.Request.Context()
	t, err := h.Quota.Store.TeamByName(ctx, c.Param("name"))
	if err != nil {
		h.fail(c, err)
		return
	}
	stored, err := h.Quota.Store.Ceilings(ctx, t.Name)
	if err != nil {
		h.fail(c, err)
		return
	}
	form := views.TeamForm{
		Name: t.Name, DisplayName: t.DisplayName, CostCenter: t.CostCenter,
		MemberGroups: strings.Join(t.MemberGroups, "\n"), LeadGroups: strings.Join(t.LeadGroups, "\n"),
		Ceilings: h.ceilingFields(c, stored),
	}
	h.renderTeamEdit(c, http.StatusOK, form)
}

func (h *handler) renderTeamEdit(c *gin.Context, status int, form views.TeamForm) {
	t, err := h.Quota.Store.TeamByName(c.Request.Context(), c.Param("name"))
	if err != nil {
		h.fail(c, err)
		return
	}
	form.Name = t.Name
	h.render(c, status, views.TeamEditPage(h.nav(c, "teams"), views.TeamEditProps{Team: teamRow(t), Form: form}))
}
