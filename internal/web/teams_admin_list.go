package web

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/roster"
	"github.com/gantry-dev/gantry/internal/store"
	"github.com/gantry-dev/gantry/views"
)

// teamsAdminList lists every team with the create form.
func (h *handler) teamsAdminList(c *gin.Context) {
	h.renderTeamsAdmin(c, http.StatusOK, views.TeamForm{Ceilings: h.ceilingFields(c, nil)})
}

func (h *handler) renderTeamsAdmin(c *gin.Context, status int, form views.TeamForm) {
	all, err := h.Quota.Store.AllTeams(c.Request.Context())
	if err != nil {
		h.fail(c, err)
		return
	}
	p := views.TeamsAdminProps{Form: form}
	for _, t := range all {
		p.Teams = append(p.Teams, teamRow(t))
	}
	h.render(c, status, views.TeamsAdminPage(h.nav(c, "teams"), p))
}

func teamRow(t roster.Team) views.TeamRow {
	return views.TeamRow{Name: t.Name, DisplayName: t.DisplayName, CostCenter: t.CostCenter,
		MemberGroups: t.MemberGroups, LeadGroups: t.LeadGroups, RetiredAt: t.RetiredAt}
}

// ceilingFields lists one ceiling input per flavor and accelerator, filled
// from the stored ceilings.
func (h *handler) ceilingFields(c *gin.Context, stored []store.TeamCeiling) []views.CeilingField {
	flavors, err := h.Quota.Board.Flavors()
	if err != nil {
		h.Log.WarnContext(c.Request.Context(), "list flavors", "err", err)
	}
	var out []views.CeilingField
	for _, f := range flavors {
		for _, r := range f.Resources {
			cf := views.CeilingField{Flavor: f.Flavor, Resource: r}
			for _, s := range stored {
				if s.Flavor == f.Flavor && s.Resource == r {
					cf.Value = strconv.FormatInt(s.Ceiling, 10)
				}
			}
			out = append(out, cf)
		}
	}
	return out
}

// splitGroups reads one group per line (commas too), dropping blanks.
func splitGroups(s string) []string {
	var out []string
	for _, g := range strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' || r == ',' }) {
		if g = strings.TrimSpace(g); g != "" {
			out = append(out, g)
		}
	}
	return out
}
