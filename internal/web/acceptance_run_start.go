package web

import (
	"errors"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/acceptance"
	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/views"
)

// acceptanceRunStart starts a run of the pool's acceptance test from the
// pool page's button and shows its report.
func (h *handler) acceptanceRunStart(c *gin.Context) {
	u, _ := auth.CurrentUser(c)
	pool := c.Param("pool")
	r, err := h.Acceptance.Start(c.Request.Context(), acceptancePerson(c, u), pool)
	var denied *acceptance.DeniedError
	switch {
	case errors.As(err, &denied):
		h.addFlash(c, views.FlashError, denied.Reason)
		redirectSeeOther(c, "/pools/"+pool+"/acceptance")
		return
	case errors.Is(err, acceptance.ErrRunInProgress):
		h.addFlash(c, views.FlashError, "An acceptance run of pool "+pool+" is already running; wait for it to finish.")
		redirectSeeOther(c, "/pools/"+pool+"/acceptance")
		return
	case err != nil:
		h.fail(c, err)
		return
	}
	h.addFlash(c, views.FlashSuccess, "Acceptance run "+strconv.FormatInt(r.ID, 10)+" of pool "+pool+" started.")
	redirectSeeOther(c, "/acceptance-runs/"+strconv.FormatInt(r.ID, 10))
}
