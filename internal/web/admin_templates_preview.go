package web

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/catalog/catalogadmin"
	"github.com/gantry-dev/gantry/views"
)

// adminTemplatesPreview renders the editor's text for sample parameters
// and lists its policy violations, without saving anything.
func (h *handler) adminTemplatesPreview(c *gin.Context) {
	ctx := c.Request.Context()
	p := views.AdminTemplateEditProps{Status: "unsaved", Spec: c.PostForm(views.FieldTemplateSpec)}
	t, err := catalogadmin.Parse(p.Spec)
	if problems, ok := problemsOf(err); ok {
		p.Problems = problems
		h.render(c, http.StatusUnprocessableEntity, views.AdminTemplateEditPage(h.nav(c, "templates"), p))
		return
	}
	if err != nil {
		h.fail(c, err)
		return
	}
	// The preview is of the text, not of a stored version: no publish
	// button until it is saved.
	p.Name = t.Name
	if err := h.editorProps(ctx, &p, &t); err != nil {
		h.fail(c, err)
		return
	}
	h.render(c, http.StatusOK, views.AdminTemplateEditPage(h.nav(c, "templates"), p))
}
