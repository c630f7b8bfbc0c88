package web

import (
	"fmt"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/proxy"
	"github.com/gantry-dev/gantry/views"
)

// endpointKeysRevoke revokes one of the endpoint's keys and returns to its page.
func (h *handler) endpointKeysRevoke(c *gin.Context) {
	u, rec, id, ok := h.endpointKeyOf(c)
	if !ok {
		return
	}
	actor := proxy.Actor{Username: u.Username, IP: c.ClientIP(), Via: u.Via()}
	k, err := h.Proxy.Access.RevokeKey(c.Request.Context(), actor, rec.Team, rec.Name, id)
	if err != nil {
		h.fail(c, err)
		return
	}
	h.addFlash(c, views.FlashSuccess, fmt.Sprintf("Key %q revoked: calls with it are refused from now on.", k.Label))
	redirectSeeOther(c, jobURL(rec.Team, rec.Name))
}
