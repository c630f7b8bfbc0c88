package web

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// apiIdleBounds are the configured limits of a policy.
type apiIdleBounds struct {
	MinWindowSeconds    int `json:"minWindowSeconds"`
	MaxWindowSeconds    int `json:"maxWindowSeconds"`
	MaxExtensionSeconds int `json:"maxExtensionSeconds"`
}

// apiIdlePolicyList is every kind's default policy and every team's own.
type apiIdlePolicyList struct {
	Policies []apiIdlePolicy `json:"policies"`
	Bounds   apiIdleBounds   `json:"bounds"`
}

// apiIdlePoliciesList lists the idle reclaim policies, defaults first.
func (h *handler) apiIdlePoliciesList(c *gin.Context) {
	ps, err := h.Idle.Policies(c.Request.Context())
	if err != nil {
		h.fail(c, err)
		return
	}
	s := h.Idle.Bounds()
	out := apiIdlePolicyList{Policies: []apiIdlePolicy{}, Bounds: apiIdleBounds{MinWindowSeconds: int(s.MinWindow.Seconds()),
		MaxWindowSeconds: int(s.MaxWindow.Seconds()), MaxExtensionSeconds: int(s.MaxExtension.Seconds())}}
	for _, p := range ps {
		out.Policies = append(out.Policies, apiIdlePolicyOf(p))
	}
	c.JSON(http.StatusOK, out)
}
