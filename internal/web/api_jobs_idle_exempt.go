package web

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// apiIdleExemptBody is the body of POST .../idle/exempt.
type apiIdleExemptBody struct {
	Reason string `json:"reason"`
}

// apiJobIdleExempt exempts a job from idle reclaim with a lead's reason.
func (h *handler) apiJobIdleExempt(c *gin.Context) {
	u, rec, ok := h.jobOf(c, idleLead)
	if !ok {
		return
	}
	var body apiIdleExemptBody
	if err := bindJSON(c, &body); err != nil {
		h.apiBadBody(c, err, `Send a JSON object: {"reason": "<why this job may sit idle>"}.`)
		return
	}
	if err := h.Idle.Exempt(c.Request.Context(), reclaimActor(c, u), rec, body.Reason); err != nil {
		h.fail(c, err)
		return
	}
	b, err := h.apiJobIdleOf(c.Request.Context(), rec)
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, b)
}
