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

// adminTokensRevoke lets an admin revoke anyone's API token.
func (h *handler) adminTokensRevoke(c *gin.Context) {
	u, _ := auth.CurrentUser(c)
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		h.fail(c, fmt.Errorf("revoke token %q: %w", c.Param("id"), store.ErrNotFound))
		return
	}
	tok, err := h.revokeAnyToken(c, u, id)
	if err != nil {
		h.fail(c, err)
		return
	}
	h.addFlash(c, views.FlashSuccess, fmt.Sprintf("Token %q of %s revoked. Scripts using it are refused from now on.", tok.Name, tok.Username))
	redirectSeeOther(c, "/admin/tokens")
}

// revokeAnyToken revokes anyone's token, by an admin, and records it.
func (h *handler) revokeAnyToken(c *gin.Context, u *auth.User, id int64) (store.APIToken, error) {
	ctx := c.Request.Context()
	tok, err := h.Store.RevokeAnyAPIToken(ctx, id, h.Now().UTC())
	if err != nil {
		return store.APIToken{}, err
	}
	if err := h.Audit.Record(ctx, audit.Event{
		Actor:  u.Username,
		Action: audit.ActionTokenRevoke,
		Target: fmt.Sprintf("api-token/%d", tok.ID),
		Detail: map[string]any{"name": tok.Name, "prefix": tok.Prefix, "owner": tok.Username, "owner_id": tok.UserID},
		IP:     c.ClientIP(),
		Via:    u.Via(),
	}); err != nil {
		return store.APIToken{}, err
	}
	return tok, nil
}
