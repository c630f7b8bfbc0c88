package web

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// apiAcceptanceRuleBody is the body of PUT /api/v1/teams/{team}/acceptance-rule.
type apiAcceptanceRuleBody struct {
	AcceptSucceeded *bool `json:"acceptSucceeded"`
}

// apiTeamsAcceptanceRule turns the team's rule that accepts succeeded runs on or off.
func (h *handler) apiTeamsAcceptanceRule(c *gin.Context) {
	acc, err := h.accounting()
	if err != nil {
		h.fail(c, err)
		return
	}
	u, team, ok := h.teamOf(c, leadsTeam)
	if !ok {
		return
	}
	var body apiAcceptanceRuleBody
	if err := bindJSON(c, &body); err != nil || body.AcceptSucceeded == nil {
		h.apiBadBody(c, err, `Send a JSON object: {"acceptSucceeded": true or false}.`)
		return
	}
	r, err := acc.SetRule(c.Request.Context(), accountingActor(c, u), team, *body.AcceptSucceeded)
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, r)
}
