package web

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// apiAllowlist is the image registry allowlist. ClusterError says in
// words when it was saved but the cluster's copy could not be updated.
type apiAllowlist struct {
	Registries   []string `json:"registries"`
	ClusterError string   `json:"clusterError,omitempty"`
}

// apiAllowlistGet returns the registries images may come from.
func (h *handler) apiAllowlistGet(c *gin.Context) {
	regs, err := h.Catalog.Allowlist(c.Request.Context())
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, apiAllowlist{Registries: append([]string{}, regs...)})
}
