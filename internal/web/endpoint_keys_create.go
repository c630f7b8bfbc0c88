package web

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/proxy"
	"github.com/gantry-dev/gantry/views"
)

// endpointKeysCreate makes a key for the endpoint and shows the job page
// with the key's secret, this once (it is never stored).
func (h *handler) endpointKeysCreate(c *gin.Context) {
	u, rec, ok := h.jobOf(c, endpoint)
	if !ok {
		return
	}
	days, err := strconv.Atoi(strings.TrimSpace(c.PostForm("days")))
	if err != nil {
		days = -1
	}
	actor := proxy.Actor{Username: u.Username, IP: c.ClientIP(), Via: u.Via()}
	key, err := h.Proxy.Access.CreateKey(c.Request.Context(), actor, rec.Team, rec.Name, c.PostForm("label"), days)
	if err != nil {
		h.fail(c, err)
		return
	}
	st, err := h.jobStatusOf(rec)
	if err != nil {
		h.fail(c, err)
		return
	}
	panel, err := h.jobPanel(c, rec, st)
	if err != nil {
		h.fail(c, err)
		return
	}
	p := h.jobProps(c, rec, st, panel)
	if err := h.accessPanels(c, rec, st, &p, key.Secret); err != nil {
		h.fail(c, err)
		return
	}
	c.Header("Cache-Control", "no-store")
	nav := h.nav(c, "jobs")
	nav.Flash = append(nav.Flash, views.Flash{Kind: views.FlashSuccess,
		Text: fmt.Sprintf("Key %q made. Copy it now: it is shown only this once.", key.Key.Label)})
	h.render(c, http.StatusCreated, views.JobPage(nav, p))
}
