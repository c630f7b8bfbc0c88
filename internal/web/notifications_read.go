package web

import (
	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/auth"
)

// notificationsRead marks all the user's messages read.
func (h *handler) notificationsRead(c *gin.Context) {
	u, _ := auth.CurrentUser(c)
	if err := h.Quota.Store.MarkNotificationsRead(c.Request.Context(), u.Username, h.Now().UTC()); err != nil {
		h.fail(c, err)
		return
	}
	redirectSeeOther(c, "/notifications")
}
