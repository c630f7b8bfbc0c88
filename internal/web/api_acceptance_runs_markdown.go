package web

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/auth"
)

// apiAcceptanceRunsMarkdown is a run's report as Markdown.
func (h *handler) apiAcceptanceRunsMarkdown(c *gin.Context) {
	u, _ := auth.CurrentUser(c)
	id, err := pathID(c)
	if err != nil {
		h.apiFail(c, err)
		return
	}
	r, err := h.Acceptance.Run(c.Request.Context(), acceptancePerson(c, u), id)
	if err != nil {
		h.apiFail(c, err)
		return
	}
	c.Data(http.StatusOK, "text/markdown; charset=utf-8", []byte(r.Markdown()))
}
