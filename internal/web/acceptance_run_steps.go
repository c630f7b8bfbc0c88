package web

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/views"
)

// acceptanceRunSteps is the live fragment of a run's steps.
func (h *handler) acceptanceRunSteps(c *gin.Context) {
	r, ok := h.acceptanceRunOf(c)
	if !ok {
		return
	}
	h.render(c, http.StatusOK, views.AcceptanceSteps(acceptanceRunProps(r)))
}
