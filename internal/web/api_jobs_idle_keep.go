package web

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// apiJobIdleKeep holds an idle notebook for its policy's extension; the
// answer is the job's idle state with the hold.
func (h *handler) apiJobIdleKeep(c *gin.Context) {
	u, rec, ok := h.jobOf(c)
	if !ok {
		return
	}
	if _, err := h.Idle.Keep(c.Request.Context(), reclaimActor(c, u), rec); err != nil {
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
