package web

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// apiEndpointKeyList is the endpoint's keys, newest first.
type apiEndpointKeyList struct {
	Keys []apiEndpointKey `json:"keys"`
}

// apiEndpointKeysList lists the endpoint's keys (revoked and expired ones
// included, secrets never).
func (h *handler) apiEndpointKeysList(c *gin.Context) {
	_, rec, ok := h.jobOf(c, endpoint)
	if !ok {
		return
	}
	keys, err := h.Proxy.Access.Keys(c.Request.Context(), rec.Team, rec.Name)
	if err != nil {
		h.fail(c, err)
		return
	}
	out := apiEndpointKeyList{Keys: make([]apiEndpointKey, 0, len(keys))}
	now := h.Now()
	for _, k := range keys {
		out.Keys = append(out.Keys, apiEndpointKeyOf(k, now))
	}
	c.JSON(http.StatusOK, out)
}
