package web

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/views"
)

// adminTemplatesImport saves every template of pasted YAML as a draft.
func (h *handler) adminTemplatesImport(c *gin.Context) {
	text := c.PostForm(views.FieldImportYAML)
	tvs, err := h.Catalog.Import(c.Request.Context(), catalogActor(c), text)
	if problems, ok := problemsOf(err); ok {
		h.renderAdminTemplates(c, http.StatusUnprocessableEntity, views.AdminTemplatesProps{ImportYAML: text, ImportProblems: problems})
		return
	}
	if err != nil {
		h.fail(c, err)
		return
	}
	names := make([]string, 0, len(tvs))
	for _, tv := range tvs {
		names = append(names, fmt.Sprintf("%s v%d", tv.Name, tv.Version))
	}
	h.addFlash(c, views.FlashSuccess, "Imported as drafts: "+strings.Join(names, ", ")+".")
	redirectSeeOther(c, "/admin/templates")
}
