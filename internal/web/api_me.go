package web

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/auth"
)

// meResponse is the caller's identity as the API reports it.
type meResponse struct {
	Username string   `json:"username"`
	Name     string   `json:"name"`
	Email    string   `json:"email"`
	Groups   []string `json:"groups"`
	Role     string   `json:"role"`
	Teams    []meTeam `json:"teams"`
	Via      string   `json:"via"`
}

type meTeam struct {
	Name        string `json:"name"`
	DisplayName string `json:"displayName"`
	Role        string `json:"role"`
}

// apiMe returns who the caller is, with teams and role.
func (h *handler) apiMe(c *gin.Context) {
	u, _ := auth.CurrentUser(c)
	resp := meResponse{
		Username: u.Username,
		Name:     u.Name,
		Email:    u.Email,
		Groups:   u.Groups,
		Role:     u.Role.String(),
		Teams:    make([]meTeam, 0, len(u.Teams)),
		Via:      u.Via(),
	}
	if resp.Groups == nil {
		resp.Groups = []string{}
	}
	for _, m := range u.Teams {
		role := auth.RoleResearcher
		if m.Lead {
			role = auth.RoleTeamLead
		}
		resp.Teams = append(resp.Teams, meTeam{Name: m.Team, DisplayName: m.DisplayName, Role: role.String()})
	}
	c.JSON(http.StatusOK, resp)
}
