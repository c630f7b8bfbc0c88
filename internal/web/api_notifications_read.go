package web

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/auth"
)

// apiNotificationsRead marks all the caller's messages read.
func (h *handler) apiNotificationsRead(c *gin.Context) {
	u, _ := auth.CurrentUser(c)
	if err := h.Quota.Store.MarkNotificationsRead(c.Request.Context(), u.Username, h.Now().UTC()); err != nil {
		h.fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}
