package web

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/acceptance"
)

// apiAcceptanceDefinitionsList lists every pool's acceptance definition (admins).
func (h *handler) apiAcceptanceDefinitionsList(c *gin.Context) {
	defs, err := h.Acceptance.Definitions(c.Request.Context())
	if err != nil {
		h.apiFail(c, err)
		return
	}
	if defs == nil {
		defs = []acceptance.Definition{}
	}
	c.JSON(http.StatusOK, apiAcceptanceDefinitionList{Definitions: defs})
}
