package web

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/internal/problem"
	"github.com/gantry-dev/gantry/internal/quota"
	"github.com/gantry-dev/gantry/views"
)

// parseQuotaForm reads the request form; errors in reading numbers and
// dates are sentences keyed by field.
func parseQuotaForm(c *gin.Context) (quota.NewRequest, views.QuotaForm) {
	f := views.QuotaForm{
		Team:     strings.TrimSpace(c.PostForm(views.FieldQuotaTeam)),
		Flavor:   strings.TrimSpace(c.PostForm(views.FieldQuotaFlavor)),
		Resource: strings.TrimSpace(c.PostForm(views.FieldQuotaResource)),
		Delta:    strings.TrimSpace(c.PostForm(views.FieldQuotaDelta)),
		Until:    strings.TrimSpace(c.PostForm(views.FieldQuotaUntil)),
		Reason:   c.PostForm(views.FieldQuotaReason),
		Errors:   map[string]string{},
	}
	in := quota.NewRequest{Team: f.Team, Flavor: f.Flavor, Resource: f.Resource, Reason: f.Reason}
	if d, err := strconv.ParseInt(f.Delta, 10, 64); err == nil {
		in.Delta = d
	} else {
		f.Errors[views.FieldQuotaDelta] = "Enter a whole number, for example 4 or -2."
	}
	if f.Until != "" {
		if t, err := time.Parse(time.DateOnly, f.Until); err == nil {
			in.Until = &t
		} else {
			f.Errors[views.FieldQuotaUntil] = "Enter the end date as YYYY-MM-DD, or leave it empty for until revoked."
		}
	}
	return in, f
}

// quotaCreate files a quota request.
func (h *handler) quotaCreate(c *gin.Context) {
	u, _ := auth.CurrentUser(c)
	in, form := parseQuotaForm(c)
	if len(form.Errors) > 0 {
		h.renderQuotaPage(c, http.StatusUnprocessableEntity, form)
		return
	}
	r, err := h.Quota.Workflow.File(c.Request.Context(), quotaActor(c, u), in)
	var verr problem.Fields
	if errors.As(err, &verr) {
		form.Errors = verr
		h.renderQuotaPage(c, http.StatusUnprocessableEntity, form)
		return
	}
	if err != nil {
		h.fail(c, err)
		return
	}
	h.addFlash(c, views.FlashSuccess, fmt.Sprintf("Request sent: %+d %s in %s for team %s. A lead of the team will decide.", r.Delta, r.Resource, r.Flavor, r.Team))
	redirectSeeOther(c, "/quota-requests")
}
