package web

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/auth"
)

// apiNotification is one message to the caller.
type apiNotification struct {
	ID     int64      `json:"id"`
	Text   string     `json:"text"`
	Link   string     `json:"link,omitempty"`
	At     time.Time  `json:"at"`
	ReadAt *time.Time `json:"readAt"`
}

// apiNotificationList is the caller's messages, newest first.
type apiNotificationList struct {
	Notifications []apiNotification `json:"notifications"`
	Unread        int               `json:"unread"`
}

// apiNotificationsList lists the caller's messages, newest first, as the
// notifications page does.
func (h *handler) apiNotificationsList(c *gin.Context) {
	u, _ := auth.CurrentUser(c)
	items, err := h.Quota.Store.Notifications(c.Request.Context(), u.Username, 100)
	if err != nil {
		h.fail(c, err)
		return
	}
	out := apiNotificationList{Notifications: make([]apiNotification, 0, len(items))}
	for _, n := range items {
		out.Notifications = append(out.Notifications, apiNotification{ID: n.ID, Text: n.Text, Link: n.Link, At: n.CreatedAt, ReadAt: n.ReadAt})
		if n.ReadAt == nil {
			out.Unread++
		}
	}
	c.JSON(http.StatusOK, out)
}
