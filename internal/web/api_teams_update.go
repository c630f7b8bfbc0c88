package web

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// apiTeamsUpdate replaces a team's display name, cost center, groups and
// ceilings and re-applies its cluster objects (its quota is kept).
func (h *handler) apiTeamsUpdate(c *gin.Context) {
	var body apiTeamBody
	if err := bindJSON(c, &body); err != nil {
		h.apiBadBody(c, err, apiTeamBodyHint)
		return
	}
	t, err := h.Quota.Teams.Update(c.Request.Context(), teamActor(c), body.form(c.Param("team")))
	h.teamsChanged()
	if err != nil {
		h.apiFail(c, err)
		return
	}
	c.JSON(http.StatusOK, apiTeamOf(t))
}
