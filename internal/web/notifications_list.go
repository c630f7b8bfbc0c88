package web

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/views"
)

// notificationsList shows the user's messages, newest first.
func (h *handler) notificationsList(c *gin.Context) {
	u, _ := auth.CurrentUser(c)
	items, err := h.Quota.Store.Notifications(c.Request.Context(), u.Username, 100)
	if err != nil {
		h.fail(c, err)
		return
	}
	p := views.NotificationsProps{}
	for _, n := range items {
		p.Items = append(p.Items, views.NotificationRow{Text: n.Text, Link: n.Link, At: n.CreatedAt, Unread: n.ReadAt == nil})
	}
	h.render(c, http.StatusOK, views.NotificationsPage(h.nav(c, "notifications"), p))
}
