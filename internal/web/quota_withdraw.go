package web

import (
	"errors"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/internal/quota"
	"github.com/gantry-dev/gantry/views"
)

// quotaWithdraw withdraws the user's own open request.
func (h *handler) quotaWithdraw(c *gin.Context) {
	u, _ := auth.CurrentUser(c)
	id, err := pathID(c)
	if err != nil {
		h.fail(c, err)
		return
	}
	_, err = h.Quota.Workflow.Withdraw(c.Request.Context(), quotaActor(c, u), id)
	var denied *quota.DeniedError
	if errors.As(err, &denied) {
		h.addFlash(c, views.FlashError, denied.Reason)
		redirectSeeOther(c, "/quota-requests")
		return
	}
	if err != nil {
		h.fail(c, err)
		return
	}
	h.addFlash(c, views.FlashSuccess, "Request withdrawn.")
	redirectSeeOther(c, "/quota-requests")
}
