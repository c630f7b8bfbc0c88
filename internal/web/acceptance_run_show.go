package web

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/views"
)

// acceptanceRunShow is a run's report page.
func (h *handler) acceptanceRunShow(c *gin.Context) {
	r, ok := h.acceptanceRunOf(c)
	if !ok {
		return
	}
	h.render(c, http.StatusOK, views.AcceptanceRunPage(h.nav(c, "acceptance"), acceptanceRunProps(r)))
}
