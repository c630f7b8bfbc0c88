package web

import (
	"net/http"
	"strings"

	"github.com/a-h/templ"
	"github.com/gin-gonic/gin"
	"github.com/gorilla/csrf"

	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/views"
)

const keyFlash = "web.flash"

// render writes a templ component with the given status.
func (h *handler) render(c *gin.Context, status int, page templ.Component) {
	c.Header("Content-Type", "text/html; charset=utf-8")
	c.Header("Cache-Control", "no-store")
	c.Status(status)
	if err := page.Render(c.Request.Context(), c.Writer); err != nil {
		h.Log.ErrorContext(c.Request.Context(), "render page", "path", c.Request.URL.Path, "err", err)
	}
}

// nav builds the page frame's props and consumes pending flash messages.
func (h *handler) nav(c *gin.Context, active string) views.Nav {
	u, _ := auth.CurrentUser(c)
	pending, unread := h.navBadges(c, u)
	return h.navCounted(c, active, pending, unread)
}

// navCounted is nav with its badges counted already (by navBadges).
func (h *handler) navCounted(c *gin.Context, active string, pending, unread int) views.Nav {
	n := views.Nav{Active: active, CSRFToken: csrf.Token(c.Request)}
	if u, ok := auth.CurrentUser(c); ok {
		n.User = navUser(u)
		n.PendingApprovals, n.UnreadNotifications = pending, unread
	}
	n.Flash = h.popFlashes(c)
	n.Stale = h.staleBanner()
	return n
}

func navUser(u *auth.User) *views.NavUser {
	return &views.NavUser{
		Username: u.Username,
		Name:     u.Name,
		Role:     u.Role.String(),
		IsLead:   u.Role >= auth.RoleTeamLead,
		IsAdmin:  u.Role == auth.RoleAdmin,
		InTeam:   u.HasTeam(),
	}
}

// addFlash queues a message for the next page this browser shows.
func (h *handler) addFlash(c *gin.Context, kind, text string) {
	ctx := c.Request.Context()
	if !sessionLoaded(c) {
		return
	}
	flashes, _ := h.Sessions.Get(ctx, keyFlash).([]string)
	h.Sessions.Put(ctx, keyFlash, append(flashes, kind+"\x1f"+text))
}

func (h *handler) popFlashes(c *gin.Context) []views.Flash {
	if !sessionLoaded(c) {
		return nil
	}
	raw, _ := h.Sessions.Pop(c.Request.Context(), keyFlash).([]string)
	out := make([]views.Flash, 0, len(raw))
	for _, r := range raw {
		kind, text, _ := strings.Cut(r, "\x1f")
		out = append(out, views.Flash{Kind: kind, Text: text})
	}
	return out
}

// sessionMarker is set in the gin context once the session is loaded.
type sessionMarker struct{}

func markSessionLoaded(c *gin.Context) {
	c.Set(sessionMarker{}, true)
	c.Next()
}

// sessionLoaded reports whether the request has a browser session (health,
// metrics and bearer-token requests do not).
func sessionLoaded(c *gin.Context) bool {
	_, ok := c.Get(sessionMarker{})
	return ok
}

// redirectSeeOther answers a form POST with a redirect to a page.
func redirectSeeOther(c *gin.Context, location string) {
	c.Redirect(http.StatusSeeOther, location)
}
