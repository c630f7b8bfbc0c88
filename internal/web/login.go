package web

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/auth"
)

// login sends the browser to the identity provider, remembering the local
// page to return to (?next=).
func (h *handler) login(c *gin.Context) {
	next := auth.SafeNext(c.Query("next"))
	if _, ok := auth.CurrentUser(c); ok {
		c.Redirect(http.StatusFound, next)
		return
	}
	target, err := h.Login.BeginLogin(c.Request.Context(), h.Sessions, next)
	if err != nil {
		h.fail(c, err)
		return
	}
	c.Header("Cache-Control", "no-store")
	c.Redirect(http.StatusFound, target)
}
