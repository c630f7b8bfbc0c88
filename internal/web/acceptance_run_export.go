package web

import (
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"
)

// acceptanceRunExport downloads a run's report as Markdown (?format=md) or JSON.
func (h *handler) acceptanceRunExport(c *gin.Context) {
	r, ok := h.acceptanceRunOf(c)
	if !ok {
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
