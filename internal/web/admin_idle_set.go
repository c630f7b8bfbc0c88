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
	"github.com/gantry-dev/gantry/internal/catalog"
	"github.com/gantry-dev/gantry/internal/reclaim"
	"github.com/gantry-dev/gantry/views"
)

// idlePolicyFromForm reads the policy form; durations are in minutes.
func idlePolicyFromForm(f views.IdlePolicyForm) (reclaim.Policy, []string) {
	p := reclaim.Policy{Team: strings.TrimSpace(f.Team), Kind: catalog.Kind(f.Kind)}
	var problems []string
	t, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(f.Threshold), "%"), 64)
	if err != nil {
		problems = append(problems, "The threshold must be a number of percent, such as 5.")
	}
	p.Threshold = t
	for _, d := range []struct {
		name, raw string
		dst       *time.Duration
	}{{"window", f.Window, &p.Window}, {"grace period", f.Grace, &p.Grace}, {"extension", f.Extension, &p.Extension}} {
		m, err := strconv.ParseFloat(strings.TrimSpace(d.raw), 64)
		if err != nil || m <= 0 {
			problems = append(problems, fmt.Sprintf("The %s must be a number of minutes above 0.", d.name))
			continue
		}
		*d.dst = time.Duration(m * float64(time.Minute)).Round(time.Second)
	}
	return p, problems
}

// adminIdleSet stores an idle reclaim policy for a kind, for one team or every team.
func (h *handler) adminIdleSet(c *gin.Context) {
	u, _ := auth.CurrentUser(c)
	form := views.IdlePolicyForm{Team: c.PostForm(views.FieldIdleTeam), Kind: c.PostForm(views.FieldIdleKind),
		Threshold: c.PostForm(views.FieldIdleThreshold), Window: c.PostForm(views.FieldIdleWindow),
		Grace: c.PostForm(views.FieldIdleGrace), Extension: c.PostForm(views.FieldIdleExtension)}
	p, problems := idlePolicyFromForm(form)
	if len(problems) > 0 {
		h.renderAdminIdle(c, http.StatusUnprocessableEntity, form, problems)
		return
	}
	saved, err := h.Idle.SetPolicy(c.Request.Context(), reclaimActor(c, u), p)
	var invalid *reclaim.PolicyError
	if errors.As(err, &invalid) {
		h.renderAdminIdle(c, http.StatusUnprocessableEntity, form, invalid.Problems)
		return
	}
	if err != nil {
		h.fail(c, err)
		return
	}
	team := saved.Team
	if team == "" {
		team = "every team"
	}
	h.addFlash(c, views.FlashSuccess, fmt.Sprintf("Idle %s of %s: under %s for %s, then %s.", saved.Kind, team, percent(saved.Threshold),
		reclaim.Words(saved.Window), saved.Action()))
	redirectSeeOther(c, "/admin/idle")
}
