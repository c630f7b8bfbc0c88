package web

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/auth"
)

// apiTokensAdminRevoke lets an admin revoke anyone's API token.
func (h *handler) apiTokensAdminRevoke(c *gin.Context) {
	u, _ := auth.CurrentUser(c)
	id, err := pathID(c)
	if err != nil {
		h.fail(c, err)
		return
	}
	tok, err := h.revokeAnyToken(c, u, id)
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, apiTokenOf(tok))
}
