package web

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/internal/catalog"
	"github.com/gantry-dev/gantry/internal/reclaim"
)

// apiIdlePolicyBody is the body of PUT /api/v1/admin/idle-policies; team
// empty sets the default of every team.
type apiIdlePolicyBody struct {
	Team             string  `json:"team"`
	Kind             string  `json:"kind"`
	ThresholdPercent float64 `json:"thresholdPercent"`
	WindowSeconds    int     `json:"windowSeconds"`
	GraceSeconds     int     `json:"graceSeconds"`
	ExtensionSeconds int     `json:"extensionSeconds"`
}

// apiIdlePoliciesSet stores an idle reclaim policy within the configured bounds.
func (h *handler) apiIdlePoliciesSet(c *gin.Context) {
	u, _ := auth.CurrentUser(c)
	var body apiIdlePolicyBody
	if err := bindJSON(c, &body); err != nil {
		h.apiBadBody(c, err, `Send a JSON object: {"team": "", "kind": "notebook", "thresholdPercent": 5, "windowSeconds": 3600, "graceSeconds": 900, "extensionSeconds": 7200}.`)
		return
	}
	p, err := h.Idle.SetPolicy(c.Request.Context(), reclaimActor(c, u), reclaim.Policy{Team: body.Team, Kind: catalog.Kind(body.Kind),
		Threshold: body.ThresholdPercent, Window: time.Duration(body.WindowSeconds) * time.Second,
		Grace: time.Duration(body.GraceSeconds) * time.Second, Extension: time.Duration(body.ExtensionSeconds) * time.Second})
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, apiIdlePolicyOf(p))
}
