package web

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/naming"
	"github.com/gantry-dev/gantry/internal/roster"
)

// apiTeam is a team as admins manage it.
type apiTeam struct {
	Name         string       `json:"name"`
	DisplayName  string       `json:"displayName"`
	CostCenter   string       `json:"costCenter"`
	Namespace    string       `json:"namespace"`
	MemberGroups []string     `json:"memberGroups"`
	LeadGroups   []string     `json:"leadGroups"`
	RetiredAt    *time.Time   `json:"retiredAt"`
	Ceilings     []apiCeiling `json:"ceilings,omitempty"`
}

// apiCeiling is the most quota of a pool a team lead may approve for the team.
type apiCeiling struct {
	Flavor   string `json:"flavor"`
	Resource string `json:"resource"`
	GPUs     int64  `json:"gpus"`
}

func apiTeamOf(t roster.Team) apiTeam {
	out := apiTeam{Name: t.Name, DisplayName: t.DisplayName, CostCenter: t.CostCenter, Namespace: naming.Namespace(t.Name),
		MemberGroups: append([]string{}, t.MemberGroups...), LeadGroups: append([]string{}, t.LeadGroups...), RetiredAt: t.RetiredAt}
	return out
}

// apiTeamList is every team.
type apiTeamList struct {
	Teams []apiTeam `json:"teams"`
}

// apiTeamsList lists every team, retired ones too, for admins.
func (h *handler) apiTeamsList(c *gin.Context) {
	all, err := h.Quota.Store.AllTeams(c.Request.Context())
	if err != nil {
		h.fail(c, err)
		return
	}
	out := apiTeamList{Teams: make([]apiTeam, 0, len(all))}
	for _, t := range all {
		out.Teams = append(out.Teams, apiTeamOf(t))
	}
	c.JSON(http.StatusOK, out)
}
