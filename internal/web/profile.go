package web

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/views"
)

const keyNewToken = "web.new_token"

// profile shows the user's identity and personal API tokens; a token made
// by the previous request is shown this once.
func (h *handler) profile(c *gin.Context) {
	h.renderProfile(c, http.StatusOK, views.TokenForm{ExpiresInDays: "30", MaxDays: maxTokenDays})
}

func (h *handler) renderProfile(c *gin.Context, status int, form views.TokenForm) {
	ctx := c.Request.Context()
	u, _ := auth.CurrentUser(c)
	tokens, err := h.Store.APITokens(ctx, u.ID)
	if err != nil {
		h.fail(c, err)
		return
	}
	props := views.ProfileProps{
		User:     *navUser(u),
		Email:    u.Email,
		Groups:   u.Groups,
		NewToken: h.Sessions.PopString(ctx, keyNewToken),
		Form:     form,
		Now:      h.Now(),
	}
	for _, t := range tokens {
		props.Tokens = append(props.Tokens, views.APIToken{
			ID:         uint(t.ID),
			Name:       t.Name,
			Prefix:     t.Prefix,
			CreatedAt:  t.CreatedAt,
			ExpiresAt:  t.ExpiresAt,
			LastUsedAt: t.LastUsedAt,
			Revoked:    t.RevokedAt != nil,
			ReadOnly:   t.ReadOnly,
		})
	}
	h.render(c, status, views.ProfilePage(h.nav(c, "profile"), props))
}
