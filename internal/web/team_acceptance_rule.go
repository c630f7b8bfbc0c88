package web

import (
	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/views"
)

// teamAcceptanceRule turns the team's rule that accepts succeeded runs on
// or off from the team page (its leads and admins).
func (h *handler) teamAcceptanceRule(c *gin.Context) {
	acc, err := h.accounting()
	if err != nil {
		h.fail(c, err)
		return
	}
	u, team, ok := h.teamOf(c, leadsTeam)
	if !ok {
		return
	}
	on := c.PostForm(views.FieldAcceptSucceeded) == "on"
	if _, err := acc.SetRule(c.Request.Context(), accountingActor(c, u), team, on); err != nil {
		h.fail(c, err)
		return
	}
	msg := "Succeeded runs of " + team + " are accepted automatically from now on, unless someone rejects them."
	if !on {
		msg = "Runs of " + team + " are accepted only by a person from now on."
	}
	h.addFlash(c, views.FlashSuccess, msg)
	redirectSeeOther(c, "/teams/"+team)
}
