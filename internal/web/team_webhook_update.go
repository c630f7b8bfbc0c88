package web

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// teamWebhookUpdate sets (or, empty, removes) the team's chat webhook
// from the team page; team leads and admins only.
func (h *handler) teamWebhookUpdate(c *gin.Context) {
	u, team, ok := h.teamOf(c)
	if !ok {
		return
	}
	if err := h.Webhooks.Set(c.Request.Context(), webhookActor(c, u), team, c.PostForm("url")); err != nil {
		h.fail(c, err)
		return
	}
	c.Redirect(http.StatusSeeOther, "/teams/"+team+"#webhook-title")
}
