package web

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/catalog/catalogadmin"
	"github.com/gantry-dev/gantry/internal/store"
	"github.com/gantry-dev/gantry/views"
)

// adminTemplatesSave stores the editor's text as a new draft version.
func (h *handler) adminTemplatesSave(c *gin.Context) {
	spec := c.PostForm(views.FieldTemplateSpec)
	var saved store.TemplateVersion
	created := false
	t, err := catalogadmin.Parse(spec)
	if err == nil {
		saved, created, err = h.Catalog.Save(c.Request.Context(), catalogActor(c), t)
	}
	if problems, ok := problemsOf(err); ok {
		p := views.AdminTemplateEditProps{Name: t.Name, Status: "unsaved", Spec: spec, Problems: problems}
		h.render(c, http.StatusUnprocessableEntity, views.AdminTemplateEditPage(h.nav(c, "templates"), p))
		return
	}
	if err != nil {
		h.fail(c, err)
		return
	}
	msg := fmt.Sprintf("Saved %s as draft version %d. Publish it to let researchers launch it.", saved.Name, saved.Version)
	if !created {
		msg = fmt.Sprintf("Nothing changed: version %d of %s has this content already.", saved.Version, saved.Name)
	}
	h.addFlash(c, views.FlashSuccess, msg)
	redirectSeeOther(c, "/admin/templates/"+saved.Name+"?version="+strconv.Itoa(saved.Version))
}
