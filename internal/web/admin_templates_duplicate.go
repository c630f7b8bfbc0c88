package web

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/views"
)

// adminTemplatesDuplicate copies a version as the first draft of a new template.
func (h *handler) adminTemplatesDuplicate(c *gin.Context) {
	name := c.Param("name")
	version, _ := strconv.Atoi(c.PostForm(views.FieldTemplateVersion))
	newName := strings.TrimSpace(c.PostForm(views.FieldTemplateNewName))
	tv, err := h.Catalog.Duplicate(c.Request.Context(), catalogActor(c), name, max(version, 0), newName)
	if problems, ok := problemsOf(err); ok {
		h.addFlash(c, views.FlashError, strings.Join(problems, " "))
		redirectSeeOther(c, "/admin/templates/"+name)
		return
	}
	if err != nil {
		h.fail(c, err)
		return
	}
	h.addFlash(c, views.FlashSuccess, fmt.Sprintf("Created %s as a copy of %s; it is a draft until published.", tv.Name, name))
	redirectSeeOther(c, "/admin/templates/"+tv.Name)
}
