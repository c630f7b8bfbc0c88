package web

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/internal/store"
)

// apiQuotaRequest is a quota request as the API shows it.
type apiQuotaRequest struct {
	ID        int64      `json:"id"`
	Team      string     `json:"team"`
	Flavor    string     `json:"flavor"`
	Resource  string     `json:"resource"`
	GPUs      int64      `json:"gpus"`
	Until     *time.Time `json:"until"`
	Reason    string     `json:"reason"`
	Requester string     `json:"requester"`
	// Status is open, approved, rejected, withdrawn or expired.
	Status    string     `json:"status"`
	DecidedBy string     `json:"decidedBy,omitempty"`
	DecidedAt *time.Time `json:"decidedAt,omitempty"`
	Comment   string     `json:"comment,omitempty"`
	CreatedAt time.Time  `json:"createdAt"`
}

func apiQuotaRequestOf(r store.QuotaRequest) apiQuotaRequest {
	return apiQuotaRequest{ID: r.ID, Team: r.Team, Flavor: r.Flavor, Resource: r.Resource, GPUs: r.Delta, Until: r.Until,
		Reason: r.Reason, Requester: r.Requester, Status: r.Status, DecidedBy: r.DecidedBy, DecidedAt: r.DecidedAt,
		Comment: r.DecisionComment, CreatedAt: r.CreatedAt}
}

// apiQuotaGrant is an applied quota change; Nominal is the team's quota
// as the cluster has it now, -1 when it could not be read.
type apiQuotaGrant struct {
	RequestID int64      `json:"requestId"`
	Team      string     `json:"team"`
	Flavor    string     `json:"flavor"`
	Resource  string     `json:"resource"`
	GPUs      int64      `json:"gpus"`
	AppliedAt time.Time  `json:"appliedAt"`
	ExpiresAt *time.Time `json:"expiresAt"`
	Nominal   int64      `json:"nominal"`
}

// apiQuotaRequestList is what the quota requests page shows: the caller's
// requests and their teams' active grants.
type apiQuotaRequestList struct {
	Requests []apiQuotaRequest `json:"requests"`
	Grants   []apiQuotaGrant   `json:"grants"`
}

// apiQuotaRequestsList lists the caller's quota requests, newest first,
// and the active grants of their teams.
func (h *handler) apiQuotaRequestsList(c *gin.Context) {
	ctx := c.Request.Context()
	u, _ := auth.CurrentUser(c)
	mine, err := h.Quota.Store.QuotaRequestsBy(ctx, u.Username, 100)
	if err != nil {
		h.fail(c, err)
		return
	}
	grants, err := h.Quota.Store.ActiveGrants(ctx, memberTeams(u))
	if err != nil {
		h.fail(c, err)
		return
	}
	out := apiQuotaRequestList{Requests: make([]apiQuotaRequest, 0, len(mine)), Grants: []apiQuotaGrant{}}
	for _, r := range mine {
		out.Requests = append(out.Requests, apiQuotaRequestOf(r))
	}
	for _, g := range h.grantRows(c, grants) {
		out.Grants = append(out.Grants, apiQuotaGrant{RequestID: g.RequestID, Team: g.Team, Flavor: g.Flavor, Resource: g.Resource,
			GPUs: g.Delta, AppliedAt: g.AppliedAt, ExpiresAt: g.ExpiresAt, Nominal: g.Nominal})
	}
	c.JSON(http.StatusOK, out)
}
