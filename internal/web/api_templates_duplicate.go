package web

import (
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"
)

// apiTemplateDuplicateBody is the body of POST /api/v1/templates/{name}/duplicate.
type apiTemplateDuplicateBody struct {
	// Version is the version copied; 0 is the newest.
	Version int    `json:"version"`
	NewName string `json:"newName"`
}

// apiTemplatesDuplicate copies a version as the first draft of a new template.
func (h *handler) apiTemplatesDuplicate(c *gin.Context) {
	var body apiTemplateDuplicateBody
	if err := bindJSON(c, &body); err != nil {
		h.apiBadBody(c, err, `Send a JSON object: {"version", "newName"}.`)
		return
	}
	tv, err := h.Catalog.Duplicate(c.Request.Context(), catalogActor(c), c.Param("name"), max(body.Version, 0), strings.TrimSpace(body.NewName))
	if err != nil {
		h.apiFail(c, err)
		return
	}
	c.JSON(http.StatusCreated, apiTemplateVersionOf(tv))
}
