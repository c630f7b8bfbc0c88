package web

import (
	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/audit"
	"github.com/gantry-dev/gantry/internal/auth"
)

// logout ends the session here and then at the identity provider
// (RP-initiated logout) when it offers that.
func (h *handler) logout(c *gin.Context) {
	ctx := c.Request.Context()
	u, signedIn := auth.CurrentUser(c)
	idToken, err := h.Auth.EndSession(ctx)
	if err != nil {
		h.fail(c, err)
		return
	}
	if signedIn {
		if err := h.Audit.Record(ctx, audit.Event{Actor: u.Username, Action: audit.ActionLogout, IP: c.ClientIP(), Via: u.Via()}); err != nil {
			h.fail(c, err)
			return
		}
	}
	target := h.Login.LogoutURL(idToken)
	if target == "" || idToken == "" {
		target = "/"
	}
	redirectSeeOther(c, target)
}
