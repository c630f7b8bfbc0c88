package web

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/acceptance"
	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/views"
)

// AcceptanceRuns defines pool acceptance runs, starts them and reads their
// reports (an *acceptance.Service).
type AcceptanceRuns interface {
	Definitions(ctx context.Context) ([]acceptance.Definition, error)
	Definition(ctx context.Context, pool string) (acceptance.Definition, error)
	SaveDefinition(ctx context.Context, p acceptance.Person, d acceptance.Definition) (acceptance.Definition, error)
	Start(ctx context.Context, p acceptance.Person, pool string) (acceptance.Report, error)
	Run(ctx context.Context, p acceptance.Person, id int64) (acceptance.Report, error)
	History(ctx context.Context, p acceptance.Person, pool string, limit int) ([]acceptance.Report, error)
}

// historyLimit is how many runs a pool's history shows.
const historyLimit = 50

// acceptancePerson is the signed-in user as the acceptance service sees them.
func acceptancePerson(c *gin.Context, u *auth.User) acceptance.Person {
	p := acceptance.Person{Username: u.Username, Groups: u.ClusterGroups, Admin: u.Role == auth.RoleAdmin, Via: u.Via(), IP: c.ClientIP()}
	for _, m := range u.Teams {
		p.Teams = append(p.Teams, m.Team)
		if m.Lead {
			p.Leads = append(p.Leads, m.Team)
		}
	}
	return p
}

func fmtFloat(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// acceptanceRunProps is a report as the page shows it.
func acceptanceRunProps(r acceptance.Report) views.AcceptanceRunProps {
	p := views.AcceptanceRunProps{
		ID: r.ID, Pool: r.Pool, Team: r.Team, Status: string(r.Status), Verdict: r.Verdict, StartedBy: r.StartedBy,
		StartedAt: r.CreatedAt.UTC().Format(time.RFC1123), Cost: r.Cost, Running: r.Status == acceptance.StatusRunning,
	}
	if r.Job != "" {
		p.Job = r.Namespace + "/" + r.Job
		p.JobURL = "/teams/" + r.Team + "/jobs/" + r.Job
	}
	for _, s := range r.Steps {
		v := views.AcceptanceStep{Number: s.Number, Title: s.Title, Status: string(s.Status), Summary: s.Summary}
		if s.Figure != nil {
			v.Figure = fmtFloat(*s.Figure) + " " + s.Unit
		}
		if s.Threshold != nil {
			bound := "≥ "
			if n := len(s.Measures); n > 0 && s.Measures[n-1].AtMost {
				bound = "≤ "
			}
			v.Threshold = bound + fmtFloat(*s.Threshold) + " " + s.Unit
		}
		p.Steps = append(p.Steps, v)
	}
	return p
}

func acceptanceDefinitionView(d acceptance.Definition) views.AcceptanceDefinitionView {
	v := views.AcceptanceDefinitionView{
		Pool: d.Pool, Team: d.Team, Template: d.Template, Image: d.Image, GPUs: strconv.Itoa(d.GPUs), Nodes: strconv.Itoa(d.Nodes),
		Dataset: d.Dataset, Weights: d.Weights, Window: strconv.Itoa(d.TrainingWindowSeconds), Benchmark: d.Benchmark,
		MaxQueueWait: fmtFloat(d.MaxQueueWaitSeconds), MaxDataPull: fmtFloat(d.MaxDataPullSeconds), MinBusBandwidth: fmtFloat(d.MinBusBandwidthGBps),
		MaxCheckpoint: fmtFloat(d.MaxCheckpointWriteSeconds), MaxRecovery: fmtFloat(d.MaxRecoverySeconds), MinThroughput: fmtFloat(d.MinSamplesPerSecond),
		BaselineLabel: d.BaselineLabel, BaselinePrice: d.BaselineUSDPerMillionSamples.Decimal(), MinRatio: fmtFloat(d.MinBaselineRatio),
		UpdatedBy: d.UpdatedBy,
	}
	if !d.UpdatedAt.IsZero() {
		v.UpdatedAt = d.UpdatedAt.UTC().Format(time.RFC1123)
	}
	return v
}

// acceptanceRoutes are the acceptance pages and their /api/v1 twins.
func (h *handler) acceptanceRoutes(signedIn, api *gin.RouterGroup) {
	signedIn.GET("/admin/acceptance", h.adminOnly, h.adminAcceptanceList)
	signedIn.POST("/admin/acceptance", h.adminOnly, h.adminAcceptanceSave)
	signedIn.GET("/pools/:pool/acceptance", h.poolAcceptanceShow)
	signedIn.POST("/pools/:pool/acceptance-runs", h.acceptanceRunStart)
	signedIn.GET("/acceptance-runs/:id", h.acceptanceRunShow)
	signedIn.GET("/acceptance-runs/:id/steps", h.acceptanceRunSteps)
	signedIn.GET("/acceptance-runs/:id/export", h.acceptanceRunExport)
	api.GET("/acceptance-definitions", h.adminOnly, h.apiAcceptanceDefinitionsList)
	api.PUT("/acceptance-definitions/:pool", h.adminOnly, h.apiAcceptanceDefinitionsPut)
	api.POST("/acceptance-runs", h.apiAcceptanceRunsCreate)
	api.GET("/acceptance-runs", h.apiAcceptanceRunsList)
	api.GET("/acceptance-runs/:id", h.apiAcceptanceRunsGet)
	api.GET("/acceptance-runs/:id/markdown", h.apiAcceptanceRunsMarkdown)
}

// teamAcceptancePools are the pools whose acceptance definition belongs to
// team, for a viewer who may start their runs (the team's leads, admins).
func (h *handler) teamAcceptancePools(ctx context.Context, u *auth.User, team string) ([]string, error) {
	if h.Acceptance == nil || !leads(u, team) {
		return nil, nil
	}
	defs, err := h.Acceptance.Definitions(ctx)
	if err != nil {
		return nil, fmt.Errorf("team %s: acceptance definitions: %w", team, err)
	}
	var pools []string
	for _, d := range defs {
		if d.Team == team {
			pools = append(pools, d.Pool)
		}
	}
	return pools, nil
}

// acceptanceRunOf is the run the path's :id names, as the signed-in user may
// read it; on false the failure page has been sent.
func (h *handler) acceptanceRunOf(c *gin.Context) (acceptance.Report, bool) {
	u, _ := auth.CurrentUser(c)
	id, err := pathID(c)
	if err != nil {
		h.fail(c, err)
		return acceptance.Report{}, false
	}
	r, err := h.Acceptance.Run(c.Request.Context(), acceptancePerson(c, u), id)
	if err != nil {
		h.fail(c, err)
		return acceptance.Report{}, false
	}
	return r, true
}
