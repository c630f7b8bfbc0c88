package web

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/audit"
	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/internal/store"
	"github.com/gantry-dev/gantry/views"
)

// tokenScope is whose API tokens a revocation reaches.
type tokenScope int

const (
	// ownTokens are the signed-in user's own tokens (the profile page's
	// and /api/v1/tokens).
	ownTokens tokenScope = iota
	// anyTokens are anyone's: the admin routes', whose groups check who
	// may use them.
	anyTokens
)

// tokenRevokePage revokes the token the form names within scope and goes
// back to the list it was revoked from, saying so: scripts using it are
// refused from then on.
func (h *handler) tokenRevokePage(scope tokenScope) gin.HandlerFunc {
	return func(c *gin.Context) {
		u, _ := auth.CurrentUser(c)
		id, err := strconv.ParseInt(c.Param("id"), 10, 64)
		if err != nil || id <= 0 {
			h.fail(c, fmt.Errorf("revoke token %q: %w", c.Param("id"), store.ErrNotFound))
			return
		}
		tok, err := h.revokeToken(c, u, id, scope)
		if err != nil {
			h.fail(c, err)
			return
		}
		if scope == anyTokens {
			h.addFlash(c, views.FlashSuccess, fmt.Sprintf("Token %q of %s revoked. Scripts using it are refused from now on.", tok.Name, tok.Username))
			redirectSeeOther(c, "/admin/tokens")
			return
		}
		h.addFlash(c, views.FlashSuccess, fmt.Sprintf("Token %q revoked. Scripts using it are refused from now on.", tok.Name))
		redirectSeeOther(c, "/profile")
	}
}

// apiTokenRevoke is tokenRevokePage for the JSON API: it answers the
// revoked token.
func (h *handler) apiTokenRevoke(scope tokenScope) gin.HandlerFunc {
	return func(c *gin.Context) {
		u, _ := auth.CurrentUser(c)
		id, err := pathID(c)
		if err != nil {
			h.fail(c, err)
			return
		}
		tok, err := h.revokeToken(c, u, id, scope)
		if err != nil {
			h.fail(c, err)
			return
		}
		c.JSON(http.StatusOK, apiTokenOf(tok))
	}
}

// revokeToken revokes the token id within scope, by u, and records it; the
// record of an admin's revocation names whose token it was.
func (h *handler) revokeToken(c *gin.Context, u *auth.User, id int64, scope tokenScope) (store.APIToken, error) {
	ctx := c.Request.Context()
	var (
		tok store.APIToken
		err error
	)
	if scope == anyTokens {
		tok, err = h.Store.RevokeAnyAPIToken(ctx, id, h.Now().UTC())
	} else {
		tok, err = h.Store.RevokeAPIToken(ctx, u.ID, id, h.Now().UTC())
	}
	if err != nil {
		return store.APIToken{}, err
	}
	detail := map[string]any{"name": tok.Name, "prefix": tok.Prefix}
	if scope == anyTokens {
		detail["owner"], detail["owner_id"] = tok.Username, tok.UserID
	}
	if err := h.Audit.Record(ctx, audit.Event{
		Actor:  u.Username,
		Action: audit.ActionTokenRevoke,
		Target: fmt.Sprintf("api-token/%d", tok.ID),
		Detail: detail,
		IP:     c.ClientIP(),
		Via:    u.Via(),
	}); err != nil {
		return store.APIToken{}, err
	}
	return tok, nil
}
