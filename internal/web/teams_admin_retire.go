package web

import (
	"fmt"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/views"
)

// teamsAdminRetire retires a team: its queues admit nothing new.
func (h *handler) teamsAdminRetire(c *gin.Context) {
	name := c.Param("name")
	if err := h.Quota.Teams.Retire(c.Request.Context(), teamActor(c), name); err != nil {
		h.fail(c, err)
		return
	}
	h.addFlash(c, views.FlashSuccess, fmt.Sprintf("Team %s retired: running work finishes, nothing new is admitted.", name))
	redirectSeeOther(c, "/admin/teams/"+name)
}
