package web

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/internal/store"
)

// apiToken is a personal API token as its owner and admins see it; the
// secret is never shown again after it was made.
type apiToken struct {
	ID         int64      `json:"id"`
	Name       string     `json:"name"`
	Prefix     string     `json:"prefix"`
	Owner      string     `json:"owner"`
	ReadOnly   bool       `json:"readOnly"`
	CreatedAt  time.Time  `json:"createdAt"`
	ExpiresAt  time.Time  `json:"expiresAt"`
	LastUsedAt *time.Time `json:"lastUsedAt"`
	RevokedAt  *time.Time `json:"revokedAt"`
}

func apiTokenOf(t store.APIToken) apiToken {
	return apiToken{ID: t.ID, Name: t.Name, Prefix: t.Prefix, Owner: t.Username, ReadOnly: t.ReadOnly, CreatedAt: t.CreatedAt,
		ExpiresAt: t.ExpiresAt, LastUsedAt: t.LastUsedAt, RevokedAt: t.RevokedAt}
}

// apiTokenList is a list of tokens, newest first.
type apiTokenList struct {
	Tokens []apiToken `json:"tokens"`
}

func apiTokenListOf(tokens []store.APIToken) apiTokenList {
	out := apiTokenList{Tokens: make([]apiToken, 0, len(tokens))}
	for _, t := range tokens {
		out.Tokens = append(out.Tokens, apiTokenOf(t))
	}
	return out
}

// apiTokensList lists the caller's own API tokens, as the profile page does.
func (h *handler) apiTokensList(c *gin.Context) {
	u, _ := auth.CurrentUser(c)
	tokens, err := h.Store.APITokens(c.Request.Context(), u.ID)
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, apiTokenListOf(tokens))
}
