package web

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/views"
)

// acceptanceRunSteps is the live fragment of a run's steps.
func (h *handler) acceptanceRunSteps(c *gin.Context) {
	u, _ := auth.CurrentUser(c)
	id, err := pathID(c)
	if err != nil {
		h.fail(c, err)
		return
	}
	r, err := h.Acceptance.Run(c.Request.Context(), acceptancePerson(c, u), id)
	if err != nil {
		h.fail(c, err)
		return
	}
	h.render(c, http.StatusOK, views.AcceptanceSteps(acceptanceRunProps(r)))
}
