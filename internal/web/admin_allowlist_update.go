package web

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/catalog/catalogadmin"
	"github.com/gantry-dev/gantry/views"
)

// adminAllowlistUpdate replaces the image registry allowlist.
func (h *handler) adminAllowlistUpdate(c *gin.Context) {
	text := c.PostForm(views.FieldRegistries)
	regs, err := h.Catalog.SetAllowlist(c.Request.Context(), catalogActor(c), text)
	if problems, ok := problemsOf(err); ok {
		h.render(c, http.StatusUnprocessableEntity, views.AdminAllowlistPage(h.nav(c, "allowlist"), views.AdminAllowlistProps{
			Registries: text, Problems: problems}))
		return
	}
	if syncErr := (*catalogadmin.ClusterSyncError)(nil); errors.As(err, &syncErr) {
		h.addFlash(c, views.FlashError, syncErr.Error())
		redirectSeeOther(c, "/admin/allowlist")
		return
	}
	if err != nil {
		h.fail(c, err)
		return
	}
	h.addFlash(c, views.FlashSuccess, fmt.Sprintf("Saved the allowlist: %d registries. Publishing and launches use it from now on.", len(regs)))
	redirectSeeOther(c, "/admin/allowlist")
}
