package web

import (
	"errors"
	"fmt"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/internal/problem"
	"github.com/gantry-dev/gantry/internal/quota"
	"github.com/gantry-dev/gantry/views"
)

// approvalsDecide approves or rejects a request with a comment.
func (h *handler) approvalsDecide(c *gin.Context) {
	u, _ := auth.CurrentUser(c)
	// Refused before the form is read: a researcher learns nothing of a request.
	if err := refuseNonDecider(u); err != nil {
		h.fail(c, err)
		return
	}
	id, err := pathID(c)
	if err != nil {
		h.fail(c, err)
		return
	}
	approve := c.PostForm(views.FieldQuotaDecision) == "approve"
	r, err := h.Quota.Workflow.Decide(c.Request.Context(), quotaActor(c, u), id, approve, c.PostForm(views.FieldQuotaComment))
	var (
		denied *quota.DeniedError
		verr   problem.Fields
	)
	switch {
	case errors.As(err, &denied):
		h.addFlash(c, views.FlashError, denied.Reason)
	case errors.As(err, &verr):
		h.addFlash(c, views.FlashError, verr.Error())
	case err != nil:
		h.fail(c, err)
		return
	case approve:
		h.addFlash(c, views.FlashSuccess, fmt.Sprintf("Approved: team %s's quota of %s in %s changed by %+d.", r.Team, r.Resource, r.Flavor, r.Delta))
	default:
		h.addFlash(c, views.FlashSuccess, fmt.Sprintf("Rejected %s's request.", r.Requester))
	}
	redirectSeeOther(c, "/approvals")
}

// refuseNonDecider refuses people who lead no team and are not admins.
func refuseNonDecider(u *auth.User) error {
	if u.Role != auth.RoleAdmin && len(decidableTeams(u)) == 0 {
		return &quota.DeniedError{Reason: "Only team leads and Gantry admins decide quota requests."}
	}
	return nil
}
