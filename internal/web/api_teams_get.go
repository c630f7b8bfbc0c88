package web

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// apiTeamsGet returns a team with its ceilings, as its edit page shows it.
func (h *handler) apiTeamsGet(c *gin.Context) {
	ctx := c.Request.Context()
	t, err := h.Quota.Store.TeamByName(ctx, c.Param("team"))
	if err != nil {
		h.fail(c, err)
		return
	}
	stored, err := h.Quota.Store.Ceilings(ctx, t.Name)
	if err != nil {
		h.fail(c, err)
		return
	}
	out := apiTeamOf(t)
	out.Ceilings = []apiCeiling{}
	for _, s := range stored {
		out.Ceilings = append(out.Ceilings, apiCeiling{Flavor: s.Flavor, Resource: s.Resource, GPUs: s.Ceiling})
	}
	c.JSON(http.StatusOK, out)
}
