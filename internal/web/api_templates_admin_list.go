package web

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// apiAdminTemplate is a template's newest version, drafts included, with
// the version researchers launch (0 when none is published).
type apiAdminTemplate struct {
	apiTemplateVersion
	PublishedVersion int `json:"publishedVersion"`
}

// apiAdminTemplateList is every template, as the admins' templates page lists them.
type apiAdminTemplateList struct {
	Templates []apiAdminTemplate `json:"templates"`
}

// apiTemplatesAdminList lists every template's newest version, for admins.
func (h *handler) apiTemplatesAdminList(c *gin.Context) {
	tvs, published, err := h.Catalog.Templates(c.Request.Context())
	if err != nil {
		h.fail(c, err)
		return
	}
	out := apiAdminTemplateList{Templates: make([]apiAdminTemplate, 0, len(tvs))}
	for _, tv := range tvs {
		out.Templates = append(out.Templates, apiAdminTemplate{apiTemplateVersion: apiTemplateVersionOf(tv), PublishedVersion: published[tv.Name]})
	}
	c.JSON(http.StatusOK, out)
}
