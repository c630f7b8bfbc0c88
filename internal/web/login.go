package web

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/auth"
)

// login sends the browser to the identity provider, remembering the local
// page to return to (?next=) in the login cookie, not in a session row: an
// anonymous visit writes nothing to the database.
func (h *handler) login(c *gin.Context) {
	next := auth.SafeNext(c.Query("next"))
	if _, ok := auth.CurrentUser(c); ok {
		c.Redirect(http.StatusFound, next)
		return
	}
	in, target, err := h.Login.StartLogin(next)
	if err != nil {
		h.fail(c, err)
		return
	}
	if err := h.loginCookie.Save(c.Writer, in); err != nil {
		h.fail(c, err)
		return
	}
	c.Header("Cache-Control", "no-store")
	c.Redirect(http.StatusFound, target)
}
