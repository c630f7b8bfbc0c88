package web

import (
	"context"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/queue"
	"github.com/gantry-dev/gantry/internal/reclaim"
	"github.com/gantry-dev/gantry/internal/store"
)

// apiIdlePolicy is an idle reclaim policy as JSON.
type apiIdlePolicy struct {
	Team             string     `json:"team"`
	Kind             string     `json:"kind"`
	ThresholdPercent float64    `json:"thresholdPercent"`
	WindowSeconds    int        `json:"windowSeconds"`
	GraceSeconds     int        `json:"graceSeconds"`
	ExtensionSeconds int        `json:"extensionSeconds"`
	Action           string     `json:"action"`
	Default          bool       `json:"default"`
	UpdatedBy        string     `json:"updatedBy,omitempty"`
	UpdatedAt        *time.Time `json:"updatedAt,omitempty"`
}

func apiIdlePolicyOf(p reclaim.Policy) apiIdlePolicy {
	out := apiIdlePolicy{Team: p.Team, Kind: string(p.Kind), ThresholdPercent: p.Threshold, WindowSeconds: int(p.Window.Seconds()),
		GraceSeconds: int(p.Grace.Seconds()), ExtensionSeconds: int(p.Extension.Seconds()), Action: p.Action(),
		Default: !p.Stored, UpdatedBy: p.UpdatedBy}
	if p.Stored {
		out.UpdatedAt = &p.UpdatedAt
	}
	return out
}

// apiIdleReclaimed is what the reclaim did to a job and what it freed.
type apiIdleReclaimed struct {
	Action          string    `json:"action"`
	At              time.Time `json:"at"`
	Reason          string    `json:"reason"`
	GPUsFreed       int64     `json:"gpusFreed"`
	IdleGPUHours    float64   `json:"idleGpuHours"`
	IdleCostUSD     string    `json:"idleCostUsd"`
	USDPerHourFreed string    `json:"usdPerHourFreed"`
}

// apiIdleWarning is a notebook's pending stop.
type apiIdleWarning struct {
	IdleSince time.Time `json:"idleSince"`
	StopAt    time.Time `json:"stopAt"`
}

// apiIdleHold is a job's exemption (until empty) or extension.
type apiIdleHold struct {
	Exempt bool       `json:"exempt"`
	Reason string     `json:"reason"`
	By     string     `json:"by"`
	At     time.Time  `json:"at"`
	Until  *time.Time `json:"until,omitempty"`
}

// apiJobIdleBody is a job's idle reclaim state.
type apiJobIdleBody struct {
	Team      string            `json:"team"`
	Name      string            `json:"name"`
	Policy    apiIdlePolicy     `json:"policy"`
	Warning   *apiIdleWarning   `json:"warning,omitempty"`
	Flagged   bool              `json:"flagged"`
	Reclaimed *apiIdleReclaimed `json:"reclaimed,omitempty"`
	Hold      *apiIdleHold      `json:"hold,omitempty"`
}

func (h *handler) apiJobIdleOf(ctx context.Context, rec store.Launch) (apiJobIdleBody, error) {
	st, err := h.jobStatusOf(rec)
	if err != nil {
		return apiJobIdleBody{}, err
	}
	s, err := h.Idle.StateOf(ctx, rec, st.Phase == queue.PhaseStopped)
	if err != nil {
		return apiJobIdleBody{}, err
	}
	b := apiJobIdleBody{Team: rec.Team, Name: rec.Name, Policy: apiIdlePolicyOf(s.Policy), Flagged: s.Flagged}
	if w := s.Warning; w != nil {
		b.Warning = &apiIdleWarning{IdleSince: w.Since, StopAt: w.StopAt}
	}
	e := s.Stopped
	if e == nil {
		e = s.Scaled
	}
	if e != nil && e.ActedAt != nil {
		b.Reclaimed = &apiIdleReclaimed{Action: e.Action, At: *e.ActedAt, Reason: reclaim.Reason(*e), GPUsFreed: e.GPUsFreed,
			IdleGPUHours: e.IdleGPUHours, IdleCostUSD: e.IdleCostUSD.Decimal(), USDPerHourFreed: e.USDPerHour.Decimal()}
	}
	if hd := s.Hold; hd != nil {
		b.Hold = &apiIdleHold{Exempt: hd.Exempt, Reason: hd.Reason, By: hd.HeldBy, At: hd.HeldAt, Until: hd.Until}
	}
	return b, nil
}

// apiJobIdle is a job's idle reclaim state: its policy, a pending warning,
// a flag, what the reclaim did and what holds it.
func (h *handler) apiJobIdle(c *gin.Context) {
	_, rec, ok := h.jobOf(c)
	if !ok {
		return
	}
	h.readJobTogether(c, rec)
	b, err := h.apiJobIdleOf(c.Request.Context(), rec)
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, b)
}
