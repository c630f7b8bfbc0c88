package web

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// apiTemplateImportBody is the body of POST /api/v1/templates/import.
type apiTemplateImportBody struct {
	// YAML holds one or more templates, as the import form takes them.
	YAML string `json:"yaml"`
}

// apiTemplatesImport saves every template of the YAML as a draft version.
func (h *handler) apiTemplatesImport(c *gin.Context) {
	var body apiTemplateImportBody
	if err := bindJSON(c, &body); err != nil {
		h.apiBadBody(c, err, `Send a JSON object: {"yaml": "<one or more templates>"}.`)
		return
	}
	tvs, err := h.Catalog.Import(c.Request.Context(), catalogActor(c), body.YAML)
	if err != nil {
		h.apiFail(c, err)
		return
	}
	out := apiTemplateVersionList{Versions: make([]apiTemplateVersion, 0, len(tvs))}
	for _, tv := range tvs {
		out.Versions = append(out.Versions, apiTemplateVersionOf(tv))
	}
	c.JSON(http.StatusCreated, out)
}
