package web

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/catalog/catalogadmin"
	"github.com/gantry-dev/gantry/views"
)

// adminTemplatesPublish makes a draft version the one researchers launch,
// unless policy finds violations, which are shown in words.
func (h *handler) adminTemplatesPublish(c *gin.Context) {
	name := c.Param("name")
	version, err := strconv.Atoi(c.PostForm(views.FieldTemplateVersion))
	if err != nil || version <= 0 {
		h.fail(c, errPageNotFound)
		return
	}
	back := "/admin/templates/" + name + "?version=" + strconv.Itoa(version)
	tv, err := h.Catalog.Publish(c.Request.Context(), catalogActor(c), name, version)
	var perr *catalogadmin.PolicyError
	if errors.As(err, &perr) {
		h.addFlash(c, views.FlashError, perr.Error())
		redirectSeeOther(c, back)
		return
	}
	if err != nil {
		h.fail(c, err)
		return
	}
	h.addFlash(c, views.FlashSuccess, fmt.Sprintf("Published version %d of %s: researchers now launch it. Running jobs keep their version.", tv.Version, tv.Name))
	redirectSeeOther(c, back)
}
