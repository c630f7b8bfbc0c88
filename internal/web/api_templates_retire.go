package web

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// apiTemplatesRetire stops a template from being offered or launched; its
// running jobs are unaffected.
func (h *handler) apiTemplatesRetire(c *gin.Context) {
	if err := h.Catalog.Retire(c.Request.Context(), catalogActor(c), c.Param("name")); err != nil {
		h.fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}
