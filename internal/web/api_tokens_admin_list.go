package web

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// apiTokensAdminList lists everyone's API tokens, newest first, for admins,
// as the admins' tokens page does.
func (h *handler) apiTokensAdminList(c *gin.Context) {
	tokens, err := h.Store.AllAPITokens(c.Request.Context(), adminTokensLimit)
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, apiTokenListOf(tokens))
}
