package web

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/views"
)

// jobScale sets an inference endpoint's replicas within its range.
func (h *handler) jobScale(c *gin.Context) {
	u, rec, ok := h.jobOf(c)
	if !ok {
		return
	}
	n, err := strconv.Atoi(strings.TrimSpace(c.PostForm("replicas")))
	if err != nil {
		h.addFlash(c, views.FlashError, "Enter the number of replicas as a whole number.")
		redirectSeeOther(c, jobURL(rec.Team, rec.Name))
		return
	}
	if err := h.Launcher.Scale(c.Request.Context(), actorOf(c, u), rec.Team, rec.Name, n); err != nil {
		if _, status := launchProblem(err); status != 0 || isScaleError(err) {
			h.addFlash(c, views.FlashError, err.Error())
			redirectSeeOther(c, jobURL(rec.Team, rec.Name))
			return
		}
		h.fail(c, err)
		return
	}
	h.addFlash(c, views.FlashSuccess, fmt.Sprintf("Scaling %s to %d replicas.", rec.Name, n))
	redirectSeeOther(c, jobURL(rec.Team, rec.Name))
}
