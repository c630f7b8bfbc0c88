package web

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// apiTemplatePublishBody is the body of POST /api/v1/templates/{name}/publish.
type apiTemplatePublishBody struct {
	Version int `json:"version"`
}

// apiTemplatesPublish makes a draft version the one researchers launch,
// unless policy finds violations, which are listed in words.
func (h *handler) apiTemplatesPublish(c *gin.Context) {
	var body apiTemplatePublishBody
	if err := bindJSON(c, &body); err != nil {
		h.apiBadBody(c, err, `Send a JSON object: {"version": <the draft's version>}.`)
		return
	}
	if body.Version <= 0 {
		h.apiInvalid(c, map[string]string{"version": "Say which version to publish: a number from the template's versions."})
		return
	}
	tv, err := h.Catalog.Publish(c.Request.Context(), catalogActor(c), c.Param("name"), body.Version)
	if err != nil {
		h.apiFail(c, err)
		return
	}
	c.JSON(http.StatusOK, apiTemplateVersionOf(tv))
}
