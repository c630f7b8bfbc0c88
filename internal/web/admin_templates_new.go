package web

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/catalog/catalogadmin"
	"github.com/gantry-dev/gantry/views"
)

// adminTemplatesNew opens the editor on a starting template.
func (h *handler) adminTemplatesNew(c *gin.Context) {
	p := views.AdminTemplateEditProps{Status: "unsaved", Spec: catalogadmin.Skeleton}
	if t, err := catalogadmin.Parse(p.Spec); err == nil {
		if err := h.editorProps(c.Request.Context(), &p, &t); err != nil {
			h.fail(c, err)
			return
		}
	}
	h.render(c, http.StatusOK, views.AdminTemplateEditPage(h.nav(c, "templates"), p))
}
