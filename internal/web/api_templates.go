package web

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/internal/catalog"
)

// apiTemplate is a template as the API lists it: its schema, and which of
// the caller's teams may use it.
type apiTemplate struct {
	catalog.Template
	UsableBy []string `json:"usableBy"`
}

// apiTemplates lists the latest templates the caller's teams may use.
func (h *handler) apiTemplates(c *gin.Context) {
	u, _ := auth.CurrentUser(c)
	ts, err := h.Jobs.TemplatesFor(c.Request.Context(), teamNames(u))
	if err != nil {
		h.fail(c, err)
		return
	}
	out := make([]apiTemplate, 0, len(ts))
	for _, t := range ts {
		out = append(out, apiTemplate{Template: t, UsableBy: templateCard(t, teamNames(u)).Teams})
	}
	c.JSON(http.StatusOK, gin.H{"templates": out})
}
