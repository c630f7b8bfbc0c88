package web

import (
	"errors"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/catalog/catalogadmin"
)

// apiAllowlistBody is the body of PUT /api/v1/allowlist.
type apiAllowlistBody struct {
	Registries []string `json:"registries"`
}

// apiAllowlistUpdate replaces the image registry allowlist.
func (h *handler) apiAllowlistUpdate(c *gin.Context) {
	var body apiAllowlistBody
	if err := bindJSON(c, &body); err != nil {
		h.apiBadBody(c, err, `Send a JSON object: {"registries": ["registry.example.com", …]}.`)
		return
	}
	// The editor's text: one registry a line.
	regs, err := h.Catalog.SetAllowlist(c.Request.Context(), catalogActor(c), strings.Join(body.Registries, "\n"))
	out := apiAllowlist{}
	// Saved, and used by the portal's checks, but the cluster's copy lags.
	if syncErr := (*catalogadmin.ClusterSyncError)(nil); errors.As(err, &syncErr) {
		out.ClusterError, err = syncErr.Error(), nil
	}
	if err != nil {
		h.apiFail(c, err)
		return
	}
	out.Registries = append([]string{}, regs...)
	c.JSON(http.StatusOK, out)
}
