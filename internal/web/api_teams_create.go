package web

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/store"
	"github.com/gantry-dev/gantry/internal/teams/teamadmin"
)

// apiTeamBody is the body of POST /api/v1/teams and PUT /api/v1/teams/{team}
// (where the name comes from the path). Ceilings not listed are none.
type apiTeamBody struct {
	Name         string       `json:"name,omitempty"`
	DisplayName  string       `json:"displayName"`
	CostCenter   string       `json:"costCenter"`
	MemberGroups []string     `json:"memberGroups"`
	LeadGroups   []string     `json:"leadGroups"`
	Ceilings     []apiCeiling `json:"ceilings"`
}

const apiTeamBodyHint = `Send a JSON object: {"name","displayName","costCenter","memberGroups":[…],"leadGroups":[…],"ceilings":[{"flavor","resource","gpus"}]}.`

// form is the body as the team admin service reads the page's form.
func (b apiTeamBody) form(name string) teamadmin.Form {
	f := teamadmin.Form{Name: name, DisplayName: b.DisplayName, CostCenter: b.CostCenter, MemberGroups: b.MemberGroups, LeadGroups: b.LeadGroups}
	for _, c := range b.Ceilings {
		f.Ceilings = append(f.Ceilings, store.TeamCeiling{Flavor: c.Flavor, Resource: c.Resource, Ceiling: c.GPUs})
	}
	return f
}

// apiTeamsCreate creates a team and its cluster objects.
func (h *handler) apiTeamsCreate(c *gin.Context) {
	var body apiTeamBody
	if err := bindJSON(c, &body); err != nil {
		h.apiBadBody(c, err, apiTeamBodyHint)
		return
	}
	t, err := h.Quota.Teams.Create(c.Request.Context(), teamActor(c), body.form(body.Name))
	h.teamsChanged()
	if err != nil {
		h.apiFail(c, err)
		return
	}
	c.Header("Location", "/api/v1/teams/"+t.Name)
	c.JSON(http.StatusCreated, apiTeamOf(t))
}
