package web

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/auth"
)

// apiTokensRevoke revokes one of the caller's own API tokens; scripts
// using it are refused from then on.
func (h *handler) apiTokensRevoke(c *gin.Context) {
	u, _ := auth.CurrentUser(c)
	id, err := pathID(c)
	if err != nil {
		h.fail(c, err)
		return
	}
	tok, err := h.revokeOwnToken(c, u, id)
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, apiTokenOf(tok))
}
