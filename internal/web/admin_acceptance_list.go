package web

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/views"
)

// adminAcceptanceList shows every pool's acceptance definition with its form.
func (h *handler) adminAcceptanceList(c *gin.Context) {
	props, err := h.acceptanceAdminProps(c)
	if err != nil {
		h.fail(c, err)
		return
	}
	h.render(c, http.StatusOK, views.AcceptanceAdminPage(h.nav(c, "acceptance"), props))
}

func (h *handler) acceptanceAdminProps(c *gin.Context) (views.AcceptanceAdminProps, error) {
	defs, err := h.Acceptance.Definitions(c.Request.Context())
	if err != nil {
		return views.AcceptanceAdminProps{}, err
	}
	var p views.AcceptanceAdminProps
	for _, d := range defs {
		p.Definitions = append(p.Definitions, acceptanceDefinitionView(d))
	}
	p.New = views.AcceptanceDefinitionView{GPUs: "1", Nodes: "1", Window: "600", MinRatio: "1", BaselineLabel: "GPU rental"}
	return p, nil
}
