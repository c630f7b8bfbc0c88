package web

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/internal/catalog"
	"github.com/gantry-dev/gantry/internal/proxy"
	"github.com/gantry-dev/gantry/internal/store"
	"github.com/gantry-dev/gantry/views"
)

// endpointKeysCreate makes a key for the endpoint and shows the job page
// with the key's secret, this once (it is never stored).
func (h *handler) endpointKeysCreate(c *gin.Context) {
	u, rec, err := h.endpointRecord(c)
	if err != nil {
		h.fail(c, err)
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

// endpointRecord loads the launch record of the inference endpoint the
// request names, if the user may see its team.
func (h *handler) endpointRecord(c *gin.Context) (*auth.User, store.Launch, error) {
	u, rec, err := h.jobRecord(c)
	if err != nil {
		return u, rec, err
	}
	if catalog.Kind(rec.Kind) != catalog.KindInference || rec.DeletedAt != nil {
		return u, rec, fmt.Errorf("keys of %s/%s: %w", rec.Team, rec.Name, errNotAnEndpoint)
	}
	return u, rec, nil
}
