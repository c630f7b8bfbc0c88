package web

import (
	"fmt"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/views"
)

// adminTemplatesRetire stops a template from being offered or launched.
func (h *handler) adminTemplatesRetire(c *gin.Context) {
	name := c.Param("name")
	if err := h.Catalog.Retire(c.Request.Context(), catalogActor(c), name); err != nil {
		h.fail(c, err)
		return
	}
	h.addFlash(c, views.FlashSuccess, fmt.Sprintf("Retired %s: researchers can no longer launch it; its running jobs are unaffected.", name))
	redirectSeeOther(c, "/admin/templates/"+name)
}
