package web

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/views"
)

// adminTemplatesExport downloads a version in the deploy/templates format.
func (h *handler) adminTemplatesExport(c *gin.Context) {
	name := c.Param("name")
	version, _ := strconv.Atoi(c.Query(views.FieldTemplateVersion))
	data, err := h.Catalog.Export(c.Request.Context(), name, max(version, 0))
	if err != nil {
		h.fail(c, err)
		return
	}
	c.Header("Content-Disposition", fmt.Sprintf(`attachment; filename="%s.yaml"`, name))
	c.Header("Cache-Control", "no-store")
	c.Data(http.StatusOK, "application/yaml; charset=utf-8", data)
}
