package web

import (
	"fmt"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/audit"
	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/internal/store"
	"github.com/gantry-dev/gantry/views"
)

// tokenRevoke revokes one of the user's own API tokens.
func (h *handler) tokenRevoke(c *gin.Context) {
	u, _ := auth.CurrentUser(c)
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		h.fail(c, fmt.Errorf("revoke token %q: %w", c.Param("id"), store.ErrNotFound))
		return
	}
	tok, err := h.revokeOwnToken(c, u, id)
	if err != nil {
		h.fail(c, err)
		return
	}
	h.addFlash(c, views.FlashSuccess, fmt.Sprintf("Token %q revoked. Scripts using it are refused from now on.", tok.Name))
	redirectSeeOther(c, "/profile")
}

// revokeOwnToken revokes one of u's own tokens and records it.
func (h *handler) revokeOwnToken(c *gin.Context, u *auth.User, id int64) (store.APIToken, error) {
	ctx := c.Request.Context()
	tok, err := h.Store.RevokeAPIToken(ctx, u.ID, id, h.Now().UTC())
	if err != nil {
		return store.APIToken{}, err
	}
	if err := h.Audit.Record(ctx, audit.Event{
		Actor:  u.Username,
		Action: audit.ActionTokenRevoke,
		Target: fmt.Sprintf("api-token/%d", tok.ID),
		Detail: map[string]any{"name": tok.Name, "prefix": tok.Prefix},
		IP:     c.ClientIP(),
		Via:    u.Via(),
	}); err != nil {
		return store.APIToken{}, err
	}
	return tok, nil
}
