package web

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/views"
)

// adminTemplatesDiff shows a line diff between two versions' YAML.
func (h *handler) adminTemplatesDiff(c *gin.Context) {
	ctx := c.Request.Context()
	name := c.Param("name")
	from, err1 := strconv.Atoi(c.Query(views.FieldDiffFrom))
	to, err2 := strconv.Atoi(c.Query(views.FieldDiffTo))
	if err1 != nil || err2 != nil || from <= 0 || to <= 0 {
		h.fail(c, errPageNotFound)
		return
	}
	diff, err := h.Catalog.Diff(ctx, name, from, to)
	if err != nil {
		h.fail(c, err)
		return
	}
	p := views.AdminTemplateDiffProps{Name: name, From: from, To: to}
	for line := range strings.Lines(diff) {
		line = strings.TrimSuffix(line, "\n")
		kind := "same"
		switch {
		case strings.HasPrefix(line, "+++"), strings.HasPrefix(line, "---"), strings.HasPrefix(line, "@@"):
			kind = "hunk"
		case strings.HasPrefix(line, "+"):
			kind = "add"
		case strings.HasPrefix(line, "-"):
			kind = "del"
		}
		p.Lines = append(p.Lines, views.DiffLine{Kind: kind, Text: line})
	}
	h.render(c, http.StatusOK, views.AdminTemplateDiffPage(h.nav(c, "templates"), p))
}
