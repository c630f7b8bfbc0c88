package web

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/acceptance"
	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/internal/store"
	"github.com/gantry-dev/gantry/views"
)

// poolAcceptanceShow is a pool's acceptance page: its definition, the
// start button for those who may start a run, and the pool's history.
func (h *handler) poolAcceptanceShow(c *gin.Context) {
	u, _ := auth.CurrentUser(c)
	ctx := c.Request.Context()
	pool := c.Param("pool")
	person := acceptancePerson(c, u)
	p := views.PoolAcceptanceProps{Pool: pool}
	d, err := h.Acceptance.Definition(ctx, pool)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		h.fail(c, err)
		return
	default:
		if !person.MayRead(d.Team) {
			h.fail(c, errPageNotFound)
			return
		}
		v := acceptanceDefinitionView(d)
		p.Definition, p.MayStart = &v, person.MayStart(d)
	}
	runs, err := h.Acceptance.History(ctx, person, pool, historyLimit)
	if err != nil {
		h.fail(c, err)
		return
	}
	for _, r := range runs {
		row := views.AcceptanceRunRow{ID: r.ID, Status: string(r.Status), Verdict: r.Verdict, StartedBy: r.StartedBy,
			StartedAt: r.CreatedAt.UTC().Format(time.RFC1123), Cost: r.Cost}
		if r.BaselineRatio != nil {
			row.Ratio = fmtFloat(*r.BaselineRatio) + "×"
		}
		row.Figures = runFigures(r)
		p.History = append(p.History, row)
	}
	h.render(c, http.StatusOK, views.PoolAcceptancePage(h.nav(c, "acceptance"), p))
}

// runFigures lists a run's measured figures: data pull, bus bandwidth,
// throughput, checkpoint write and recovery, in the steps' order.
func runFigures(r acceptance.Report) string {
	var parts []string
	for _, s := range r.Steps {
		for _, m := range s.Measures {
			if s.Number >= 2 && s.Number <= 5 {
				parts = append(parts, m.Name+" "+fmtFloat(m.Figure)+" "+m.Unit)
			}
		}
	}
	return strings.Join(parts, " · ")
}
