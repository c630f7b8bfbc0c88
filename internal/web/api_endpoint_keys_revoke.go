package web

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/proxy"
)

// apiEndpointKeysRevoke revokes one of the endpoint's keys, as the job
// page's Revoke button does.
func (h *handler) apiEndpointKeysRevoke(c *gin.Context) {
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
	c.JSON(http.StatusOK, apiEndpointKeyOf(k, h.Now()))
}
