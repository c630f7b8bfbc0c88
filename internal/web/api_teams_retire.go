package web

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// apiTeamsRetire retires a team: its queues admit nothing new.
func (h *handler) apiTeamsRetire(c *gin.Context) {
	ctx := c.Request.Context()
	name := c.Param("team")
	if err := h.Quota.Teams.Retire(ctx, teamActor(c), name); err != nil {
		h.fail(c, err)
		return
	}
	t, err := h.Quota.Store.TeamByName(ctx, name)
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, apiTeamOf(t))
}
