package web

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"
)

// apiWebhookRequest is the body of PUT /api/v1/teams/{team}/webhook; an
// empty url removes the webhook.
type apiWebhookRequest struct {
	URL string `json:"url"`
}

// apiTeamWebhookPut sets the team's chat webhook, as the team page's form
// does; team leads and admins only.
func (h *handler) apiTeamWebhookPut(c *gin.Context) {
	u, team, ok := h.teamOf(c)
	if !ok {
		return
	}
	var req apiWebhookRequest
	if err := bindJSON(c, &req); err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			h.fail(c, fmt.Errorf("webhook request: %w", err))
			return
		}
		c.JSON(http.StatusBadRequest, gin.H{"error": "Bad request", "code": "bad_request", "message": `Send a JSON object {"url": "https://…"}; an empty url removes the webhook.`})
		return
	}
	ctx := c.Request.Context()
	if err := h.Webhooks.Set(ctx, webhookActor(c, u), team, req.URL); err != nil {
		h.fail(c, err)
		return
	}
	w, err := h.Webhooks.Get(ctx, team)
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, apiWebhookOf(w))
}
