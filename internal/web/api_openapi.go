package web

import (
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"
)

// apiOpenAPI serves the OpenAPI 3 document of /api/v1.
func (h *handler) apiOpenAPI(c *gin.Context) {
	c.JSON(http.StatusOK, openAPIDocument(apiOperations(), strings.TrimSuffix(h.PublicURL.String(), "/")+"/api/v1"))
}
