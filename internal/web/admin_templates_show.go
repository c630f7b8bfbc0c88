package web

import (
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/catalog"
	"github.com/gantry-dev/gantry/views"
)

// adminTemplatesShow opens the editor on a saved version (?version=N, the
// newest by default) with its schema, preview, policy check and history.
func (h *handler) adminTemplatesShow(c *gin.Context) {
	ctx := c.Request.Context()
	version, _ := strconv.Atoi(c.Query(views.FieldTemplateVersion))
	tv, t, err := h.Catalog.Version(ctx, c.Param("name"), max(version, 0))
	if err != nil {
		h.fail(c, err)
		return
	}
	spec, err := catalog.FileYAML(t)
	if err != nil {
		h.fail(c, err)
		return
	}
	history, err := h.Catalog.History(ctx, tv.Name)
	if err != nil {
		h.fail(c, err)
		return
	}
	p := views.AdminTemplateEditProps{Name: tv.Name, Version: tv.Version, Status: versionStatus(tv), Spec: string(spec), Versions: versionRows(history)}
	if err := h.editorProps(ctx, &p, &t); err != nil {
		h.fail(c, err)
		return
	}
	h.render(c, http.StatusOK, views.AdminTemplateEditPage(h.nav(c, "templates"), p))
}
