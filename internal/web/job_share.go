package web

import (
	"fmt"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/proxy"
	"github.com/gantry-dev/gantry/views"
)

// jobShare lets the notebook's owner share it with the team (shared=1) or
// take that back (shared=0), and returns to its page.
func (h *handler) jobShare(c *gin.Context) {
	u, rec, ok := h.jobOf(c, notebook)
	if !ok {
		return
	}
	shared := c.PostForm("shared") == "1"
	actor := proxy.Actor{Username: u.Username, IP: c.ClientIP(), Via: u.Via()}
	if err := h.Proxy.Access.SetShared(c.Request.Context(), actor, rec.Team, rec.Name, rec.Owner, shared); err != nil {
		h.fail(c, err)
		return
	}
	msg := fmt.Sprintf("Only you can open %s now.", rec.Name)
	if shared {
		msg = fmt.Sprintf("Members of team %s can open %s now.", rec.Team, rec.Name)
	}
	h.addFlash(c, views.FlashSuccess, msg)
	redirectSeeOther(c, jobURL(rec.Team, rec.Name))
}
