package web

import (
	"errors"
	"fmt"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/problem"
	"github.com/gantry-dev/gantry/views"
)

// jobVerdict accepts or rejects a job's result from its page and returns there.
func (h *handler) jobVerdict(c *gin.Context) {
	acc, err := h.accounting()
	if err != nil {
		h.fail(c, err)
		return
	}
	u, rec, ok := h.jobOf(c, judge)
	if !ok {
		return
	}
	v, err := acc.Decide(c.Request.Context(), accountingActor(c, u), rec.Team, rec.Namespace, rec.Name,
		c.PostForm(views.FieldVerdict), c.PostForm(views.FieldVerdictNote))
	var invalid problem.Fields
	if errors.As(err, &invalid) {
		h.addFlash(c, views.FlashError, invalid.Error())
		redirectSeeOther(c, jobURL(rec.Team, rec.Name))
		return
	}
	if err != nil {
		h.fail(c, err)
		return
	}
	h.addFlash(c, views.FlashSuccess, fmt.Sprintf("The result of %s is %s; the team's cost per accepted run counts it.", rec.Name, v.Verdict))
	redirectSeeOther(c, jobURL(rec.Team, rec.Name))
}
