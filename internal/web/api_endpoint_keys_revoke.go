package web

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/proxy"
	"github.com/gantry-dev/gantry/internal/store"
)

// apiEndpointKeysRevoke revokes one of the endpoint's keys, as the job
// page's Revoke button does.
func (h *handler) apiEndpointKeysRevoke(c *gin.Context) {
	u, rec, err := h.endpointRecord(c)
	if err != nil {
		h.fail(c, err)
		return
	}
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		h.fail(c, fmt.Errorf("revoke key %q: %w", c.Param("id"), store.ErrNotFound))
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
