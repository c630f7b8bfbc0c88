package web

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/acceptance"
	"github.com/gantry-dev/gantry/internal/auth"
)

// apiAcceptanceDefinitionsPut stores a pool's acceptance definition (admins).
func (h *handler) apiAcceptanceDefinitionsPut(c *gin.Context) {
	u, _ := auth.CurrentUser(c)
	var d acceptance.Definition
	if err := bindJSON(c, &d); err != nil {
		h.apiBadBody(c, err, "Send the definition as JSON: pool fields as in GET /api/v1/acceptance-definitions.")
		return
	}
	d.Pool = c.Param("pool")
	saved, err := h.Acceptance.SaveDefinition(c.Request.Context(), acceptancePerson(c, u), d)
	if err != nil {
		h.apiFail(c, err)
		return
	}
	c.JSON(http.StatusOK, saved)
}
