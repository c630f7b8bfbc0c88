package web

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/catalog/catalogadmin"
)

// apiTemplatePreview is a template rendered for sample parameters, with
// the policy violations that would stop it from being published.
type apiTemplatePreview struct {
	Name       string   `json:"name"`
	Rendered   string   `json:"rendered"`
	Violations []string `json:"violations"`
}

// apiTemplatesPreview renders a template's YAML for sample parameters and
// lists its policy violations, without saving anything.
func (h *handler) apiTemplatesPreview(c *gin.Context) {
	var body apiTemplateImportBody
	if err := bindJSON(c, &body); err != nil {
		h.apiBadBody(c, err, `Send a JSON object: {"yaml": "<one template>"}.`)
		return
	}
	t, err := catalogadmin.Parse(body.YAML)
	if err != nil {
		h.apiFail(c, err)
		return
	}
	sample, violations, err := h.Catalog.Preview(c.Request.Context(), &t)
	if err != nil {
		h.apiFail(c, err)
		return
	}
	c.JSON(http.StatusOK, apiTemplatePreview{Name: t.Name, Rendered: sample.YAML, Violations: append([]string{}, violations...)})
}
