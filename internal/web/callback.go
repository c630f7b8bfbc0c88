package web

import (
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/audit"
	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/internal/store"
)

// callback completes a login: checks the IdP's answer against the session,
// records the user and their groups, rotates the session and returns to
// the page first asked for.
func (h *handler) callback(c *gin.Context) {
	ctx := c.Request.Context()
	want, err := h.loginCookie.Take(c.Writer, c.Request)
	id, next := auth.Identity{}, "/"
	if err == nil {
		id, next, err = h.Login.FinishLogin(ctx, want, c.Request.URL.Query())
	}
	if err != nil {
		if aerr := h.Audit.Record(ctx, audit.Event{
			Actor:  "anonymous",
			Action: audit.ActionLoginFailed,
			Detail: map[string]any{"reason": describe(err).Message},
			IP:     c.ClientIP(),
			Via:    audit.ViaBrowser,
		}); aerr != nil {
			h.Log.ErrorContext(ctx, "audit failed login", "err", aerr)
		}
		h.fail(c, err)
		return
	}
	u, err := h.Store.RecordLogin(ctx, store.User{
		Issuer:      id.Issuer,
		Subject:     id.Subject,
		Username:    id.Username,
		Name:        id.Name,
		Email:       id.Email,
		Groups:      store.StringList(id.Groups),
		LastLoginAt: h.Now().UTC(),
	})
	if err != nil {
		h.fail(c, err)
		return
	}
	if err := h.Auth.StartSession(ctx, u.ID, id.RawIDToken); err != nil {
		h.fail(c, err)
		return
	}
	if err := h.Audit.Record(ctx, audit.Event{
		Actor:  id.Username,
		Action: audit.ActionLogin,
		Detail: map[string]any{"groups": id.Groups, "subject": id.Subject, "issuer": id.Issuer, "user_id": u.ID},
		IP:     c.ClientIP(),
		Via:    audit.ViaBrowser,
	}); err != nil {
		h.fail(c, fmt.Errorf("login of %s: %w", id.Username, err))
		return
	}
	c.Redirect(http.StatusFound, next)
}
