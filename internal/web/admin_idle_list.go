package web

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/reclaim"
	"github.com/gantry-dev/gantry/views"
)

// adminIdleList shows the idle reclaim policies and the form to set one.
func (h *handler) adminIdleList(c *gin.Context) {
	s := h.Idle.Bounds()
	h.renderAdminIdle(c, http.StatusOK, views.IdlePolicyForm{Kind: "notebook", Threshold: percentValue(s.Threshold),
		Window: minutes(s.Window.Minutes()), Grace: minutes(s.Grace.Minutes()), Extension: minutes(s.Extension.Minutes())}, nil)
}

func percentValue(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func minutes(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func (h *handler) renderAdminIdle(c *gin.Context, status int, form views.IdlePolicyForm, problems []string) {
	ctx := c.Request.Context()
	ps, err := h.Idle.Policies(ctx)
	if err != nil {
		h.fail(c, err)
		return
	}
	s := h.Idle.Bounds()
	p := views.AdminIdleProps{Form: form, Problems: problems,
		Bounds: fmt.Sprintf("Windows may be set from %s to %s; \"keep it running\" holds for at most %s.",
			reclaim.Words(s.MinWindow), reclaim.Words(s.MaxWindow), reclaim.Words(s.MaxExtension)),
		Teams: []views.Option{{Value: "", Label: "Every team (default)"}}}
	for _, k := range reclaim.Kinds {
		p.Kinds = append(p.Kinds, views.Option{Value: string(k), Label: string(k)})
	}
	if h.Quota != nil && h.Quota.Store != nil {
		teams, err := h.Quota.Store.AllTeams(ctx)
		if err != nil {
			h.fail(c, err)
			return
		}
		for _, t := range teams {
			p.Teams = append(p.Teams, views.Option{Value: t.Name, Label: t.Name})
		}
	}
	for _, pol := range ps {
		team := pol.Team
		if team == "" {
			team = "every team"
		}
		by := "configured default"
		if pol.Stored {
			by = pol.UpdatedBy + ", " + pol.UpdatedAt.UTC().Format("2006-01-02 15:04 UTC")
		}
		p.Policies = append(p.Policies, views.IdlePolicyRow{Team: team, Kind: string(pol.Kind), Threshold: percent(pol.Threshold),
			Window: reclaim.Words(pol.Window), Grace: reclaim.Words(pol.Grace), Extension: reclaim.Words(pol.Extension),
			Action: pol.Action(), UpdatedBy: by, Default: pol.Team == ""})
	}
	h.render(c, status, views.AdminIdlePage(h.nav(c, "idle"), p))
}
