package web

import (
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/auth"
)

// acceptanceRunExport downloads a run's report as Markdown (?format=md) or JSON.
func (h *handler) acceptanceRunExport(c *gin.Context) {
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
	name := fmt.Sprintf("acceptance-%s-%d", r.Pool, r.ID)
	if c.Query("format") == "json" {
		c.Header("Content-Disposition", `attachment; filename="`+name+`.json"`)
		c.JSON(http.StatusOK, r)
		return
	}
	c.Header("Content-Disposition", `attachment; filename="`+name+`.md"`)
	c.Data(http.StatusOK, "text/markdown; charset=utf-8", []byte(r.Markdown()))
}
