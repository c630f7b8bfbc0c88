package web

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/internal/launch"
	"github.com/gantry-dev/gantry/internal/naming"
	"github.com/gantry-dev/gantry/internal/problem"
	"github.com/gantry-dev/gantry/views"
)

// launchFields are the template parameters a form or API request may carry.
var launchFields = []string{
	naming.FieldGPUType, naming.FieldGPUs, naming.FieldCPU, naming.FieldMemory, naming.FieldReplicas,
	naming.FieldNodes, naming.FieldDurationMinutes, naming.FieldArgs, naming.FieldModel, naming.FieldDataset, naming.FieldCheckpoint,
}

// launchSubmit launches from the form; problems re-render it with the typed values.
func (h *handler) launchSubmit(c *gin.Context) {
	ctx := c.Request.Context()
	u, _ := auth.CurrentUser(c)
	t, err := h.Launcher.Template(ctx, c.Param("template"), 0)
	if err != nil {
		h.fail(c, err)
		return
	}
	values := map[string]string{}
	for _, f := range launchFields {
		if v, ok := c.GetPostForm(f); ok {
			values[f] = v
		}
	}
	team := c.PostForm(views.FieldTeam)
	launchID := c.PostForm(views.FieldLaunchID)
	// The version the person saw; a form without one launches the newest.
	version := t.Version
	if v, err := strconv.Atoi(c.PostForm(views.FieldVersion)); err == nil && v > 0 {
		version = v
	}
	res, err := h.launchAs(c, u, launch.Request{Team: team, Template: t.Name, Version: version, Values: values, LaunchID: launchID})
	if err != nil {
		errs, status := launchProblem(err)
		if errs == nil {
			h.fail(c, err)
			return
		}
		h.Log.InfoContext(ctx, "launch refused", "user", u.Username, "team", team, "template", t.Name, "err", err)
		var collision *launch.CollisionError
		if errors.As(err, &collision) {
			launchID = launch.NewLaunchID() // the old name is taken: resubmitting must try a new one
		}
		form := t.Defaults()
		for k, v := range values {
			form[k] = v
		}
		h.render(c, status, views.LaunchFormPage(h.nav(c, "launch"), launchFormProps(u, t, team, launchID, form, errs)))
		return
	}
	if res.Existing {
		h.addFlash(c, views.FlashInfo, fmt.Sprintf("%s was already launched; here it is.", res.Name))
	} else {
		h.addFlash(c, views.FlashSuccess, fmt.Sprintf("Launched %s. It is queued until Kueue admits it.", res.Name))
	}
	redirectSeeOther(c, jobURL(res.Team, res.Name))
}

// notMemberError refuses a launch into a team the user is not in.
type notMemberError struct{ team string }

func (e *notMemberError) Error() string {
	return fmt.Sprintf("Refused: you are not a member of team %s, so you cannot launch jobs in it.", e.team)
}

// launchAs launches as the user. A launch into a team they are not in is
// refused before its parameters are checked, so the answer is the refusal
// rather than advice on fields; admins are left to Kubernetes.
func (h *handler) launchAs(c *gin.Context, u *auth.User, req launch.Request) (launch.Result, error) {
	if req.Team != "" && !canSeeTeam(u, req.Team) {
		return launch.Result{}, &notMemberError{team: req.Team}
	}
	return h.Launcher.Launch(c.Request.Context(), actorOf(c, u), req)
}

// launchProblem turns a launch error a person can fix or should read into
// field errors and a status; other errors give nil.
func launchProblem(err error) (problem.Fields, int) {
	var fe problem.Fields
	var forbidden *launch.ForbiddenError
	var collision *launch.CollisionError
	var outdated *launch.OutdatedVersionError
	var notMember *notMemberError
	switch {
	case errors.As(err, &notMember):
		return problem.Fields{naming.FieldTeam: notMember.Error()}, http.StatusForbidden
	case errors.As(err, &outdated):
		return problem.Fields{"": outdated.Error()}, http.StatusConflict
	case errors.As(err, &fe):
		return fe, http.StatusUnprocessableEntity
	case errors.As(err, &forbidden):
		return problem.Fields{naming.FieldTeam: forbidden.Error()}, http.StatusForbidden
	case errors.As(err, &collision):
		return problem.Fields{"": collision.Error() + " Submit the form again to launch under a new name."}, http.StatusConflict
	}
	return nil, 0
}
