package web

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/views"
)

// adminTokensLimit is how many of the newest tokens the admins' page lists.
const adminTokensLimit = 500

// adminTokensList shows admins everyone's API tokens, so a leaked or
// forgotten one can be found and revoked.
func (h *handler) adminTokensList(c *gin.Context) {
	tokens, err := h.Store.AllAPITokens(c.Request.Context(), adminTokensLimit)
	if err != nil {
		h.fail(c, err)
		return
	}
	props := views.AdminTokensProps{Limit: adminTokensLimit, Now: h.Now()}
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
			Owner:      t.Username,
		})
	}
	h.render(c, http.StatusOK, views.AdminTokensPage(h.nav(c, "tokens"), props))
}
