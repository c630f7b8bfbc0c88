package web

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/auth"
)

// teamWebhookUpdate sets (or, empty, removes) the team's chat webhook
// from the team page; team leads and admins only.
func (h *handler) teamWebhookUpdate(c *gin.Context) {
	u, _ := auth.CurrentUser(c)
	team := c.Param("team")
	if !canSeeTeam(u, team) {
		h.fail(c, errNotYourTeam)
		return
	}
	if err := h.Webhooks.Set(c.Request.Context(), webhookActor(c, u), team, c.PostForm("url")); err != nil {
		h.fail(c, err)
		return
	}
	c.Redirect(http.StatusSeeOther, "/teams/"+team+"#webhook-title")
}
