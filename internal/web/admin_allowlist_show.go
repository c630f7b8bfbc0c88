package web

import (
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/views"
)

// adminAllowlistShow shows the image registry allowlist editor.
func (h *handler) adminAllowlistShow(c *gin.Context) {
	regs, err := h.Catalog.Allowlist(c.Request.Context())
	if err != nil {
		h.fail(c, err)
		return
	}
	h.render(c, http.StatusOK, views.AdminAllowlistPage(h.nav(c, "allowlist"), views.AdminAllowlistProps{
		Registries: strings.Join(regs, "\n"), Count: len(regs)}))
}
