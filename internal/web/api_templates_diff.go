package web

import (
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"
)

// apiTemplateDiff is a unified line diff between two versions' YAML.
type apiTemplateDiff struct {
	Name string `json:"name"`
	From int    `json:"from"`
	To   int    `json:"to"`
	Diff string `json:"diff"`
}

// apiTemplatesDiff compares two versions of a template (?from=&to=).
func (h *handler) apiTemplatesDiff(c *gin.Context) {
	from, err1 := strconv.Atoi(c.Query("from"))
	to, err2 := strconv.Atoi(c.Query("to"))
	if err1 != nil || err2 != nil || from <= 0 || to <= 0 {
		h.apiInvalid(c, map[string]string{"from": "Give the two versions to compare as ?from=1&to=2."})
		return
	}
	name := c.Param("name")
	diff, err := h.Catalog.Diff(c.Request.Context(), name, from, to)
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, apiTemplateDiff{Name: name, From: from, To: to, Diff: diff})
}
