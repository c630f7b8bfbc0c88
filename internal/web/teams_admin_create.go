package web

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/internal/naming"
	"github.com/gantry-dev/gantry/internal/problem"
	"github.com/gantry-dev/gantry/internal/store"
	"github.com/gantry-dev/gantry/internal/teams/teamadmin"
	"github.com/gantry-dev/gantry/views"
)

// parseTeamForm reads the team form; ceilings that are not numbers are
// reported in words.
func (h *handler) parseTeamForm(c *gin.Context) (teamadmin.Form, views.TeamForm) {
	vf := views.TeamForm{
		Name:         strings.TrimSpace(c.PostForm(views.FieldTeamName)),
		DisplayName:  c.PostForm(views.FieldTeamDisplayName),
		CostCenter:   c.PostForm(views.FieldTeamCostCenter),
		MemberGroups: c.PostForm(views.FieldTeamMemberGroups),
		LeadGroups:   c.PostForm(views.FieldTeamLeadGroups),
		Ceilings:     h.ceilingFields(c, nil),
		Errors:       map[string]string{},
	}
	f := teamadmin.Form{Name: vf.Name, DisplayName: vf.DisplayName, CostCenter: vf.CostCenter,
		MemberGroups: splitGroups(vf.MemberGroups), LeadGroups: splitGroups(vf.LeadGroups)}
	for i, cf := range vf.Ceilings {
		v := strings.TrimSpace(c.PostForm(views.FieldTeamCeilingPrefix + cf.Flavor + "/" + cf.Resource))
		vf.Ceilings[i].Value = v
		if v == "" {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			vf.Errors[views.FieldTeamCeilings] = "Ceilings are whole numbers of GPUs, zero or more; leave a field empty for no ceiling."
			continue
		}
		f.Ceilings = append(f.Ceilings, store.TeamCeiling{Flavor: cf.Flavor, Resource: cf.Resource, Ceiling: n})
	}
	return f, vf
}

func teamActor(c *gin.Context) teamadmin.Actor {
	u, _ := auth.CurrentUser(c)
	return teamadmin.Actor{Username: u.Username, IP: c.ClientIP(), Via: u.Via()}
}

// teamsAdminCreate creates a team and its cluster objects.
func (h *handler) teamsAdminCreate(c *gin.Context) {
	f, vf := h.parseTeamForm(c)
	if len(vf.Errors) > 0 {
		h.renderTeamsAdmin(c, http.StatusUnprocessableEntity, vf)
		return
	}
	t, err := h.Quota.Teams.Create(c.Request.Context(), teamActor(c), f)
	h.teamsChanged()
	var verr problem.Fields
	if errors.As(err, &verr) {
		vf.Errors = verr
		h.renderTeamsAdmin(c, http.StatusUnprocessableEntity, vf)
		return
	}
	if err != nil {
		h.fail(c, err)
		return
	}
	h.addFlash(c, views.FlashSuccess, fmt.Sprintf("Team %s created with namespace %s.", t.Name, naming.Namespace(t.Name)))
	redirectSeeOther(c, "/admin/teams/"+t.Name)
}
