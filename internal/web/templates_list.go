package web

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/internal/catalog"
	"github.com/gantry-dev/gantry/views"
)

// templatesList shows the templates the user's teams may launch.
func (h *handler) templatesList(c *gin.Context) {
	u, _ := auth.CurrentUser(c)
	ts, err := h.Jobs.TemplatesFor(c.Request.Context(), teamNames(u))
	if err != nil {
		h.fail(c, err)
		return
	}
	p := views.TemplatesProps{}
	for _, t := range ts {
		p.Templates = append(p.Templates, templateCard(t, teamNames(u)))
	}
	h.render(c, http.StatusOK, views.TemplatesPage(h.nav(c, "launch"), p))
}

func templateCard(t catalog.Template, teams []string) views.TemplateCard {
	card := views.TemplateCard{Name: t.Name, Title: t.Title, Description: t.Description, Kind: string(t.Kind), Image: t.Image, Version: t.Version}
	for _, team := range teams {
		if t.AllowedFor(team) {
			card.Teams = append(card.Teams, team)
		}
	}
	for _, g := range t.GPUTypes {
		card.GPUTypes = append(card.GPUTypes, g.Label)
	}
	return card
}
