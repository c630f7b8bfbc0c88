package web

import (
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"
)

// apiTemplateSource is a version with its YAML, as export writes it.
type apiTemplateSource struct {
	apiTemplateVersion
	YAML string `json:"yaml"`
}

// apiTemplatesGet returns one version of a template with its YAML, for
// admins; version 0 or "latest" is the newest.
func (h *handler) apiTemplatesGet(c *gin.Context) {
	ctx := c.Request.Context()
	version := 0
	if v := c.Param("version"); v != "latest" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			h.fail(c, errPageNotFound)
			return
		}
		version = n
	}
	tv, _, err := h.Catalog.Version(ctx, c.Param("name"), version)
	if err != nil {
		h.fail(c, err)
		return
	}
	data, err := h.Catalog.Export(ctx, tv.Name, tv.Version)
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, apiTemplateSource{apiTemplateVersion: apiTemplateVersionOf(tv), YAML: string(data)})
}
