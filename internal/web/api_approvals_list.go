package web

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/auth"
)

// apiApproval is an open request with the figures a decider weighs. The
// quota figures are present when Known; CannotApprove says why the caller
// may only reject it.
type apiApproval struct {
	apiQuotaRequest
	Own             bool   `json:"own"`
	Known           bool   `json:"known"`
	Nominal         int64  `json:"nominal"`
	NewNominal      int64  `json:"newNominal"`
	Used            int64  `json:"used"`
	Pending         int    `json:"pending"`
	CohortFree      int64  `json:"cohortFree"`
	CohortNominal   int64  `json:"cohortNominal"`
	Physical        int64  `json:"physical"`
	Ceiling         *int64 `json:"ceiling"`
	CannotApprove   string `json:"cannotApprove,omitempty"`
	PhysicalWarning string `json:"physicalWarning,omitempty"`
}

// apiApprovalList is what the approvals page shows.
type apiApprovalList struct {
	Requests     []apiApproval   `json:"requests"`
	Grants       []apiQuotaGrant `json:"grants"`
	ClusterError string          `json:"clusterError,omitempty"`
}

// apiApprovalsList lists the open requests the caller decides (none for a
// researcher), with the figures the approvals page shows.
func (h *handler) apiApprovalsList(c *gin.Context) {
	ctx := c.Request.Context()
	u, _ := auth.CurrentUser(c)
	scope := decidableTeams(u)
	open, err := h.Quota.Store.OpenQuotaRequests(ctx, scope)
	if err != nil {
		h.fail(c, err)
		return
	}
	grants, err := h.Quota.Store.ActiveGrants(ctx, scope)
	if err != nil {
		h.fail(c, err)
		return
	}
	rows, clusterError, err := h.approvalRows(c, u, open)
	if err != nil {
		h.fail(c, err)
		return
	}
	out := apiApprovalList{Requests: make([]apiApproval, 0, len(rows)), Grants: []apiQuotaGrant{}, ClusterError: clusterError}
	for i, row := range rows {
		a := apiApproval{apiQuotaRequest: apiQuotaRequestOf(open[i]), Own: row.Own, Known: row.Known,
			Nominal: row.Nominal, NewNominal: row.NewNominal, Used: row.Used, Pending: row.Pending,
			CohortFree: row.CohortFree, CohortNominal: row.CohortNominal, Physical: row.Physical,
			CannotApprove: row.CannotApprove, PhysicalWarning: row.PhysicalWarning}
		if row.HasCeiling {
			a.Ceiling = &row.Ceiling
		}
		out.Requests = append(out.Requests, a)
	}
	for _, g := range h.grantRows(c, grants) {
		out.Grants = append(out.Grants, apiQuotaGrant{RequestID: g.RequestID, Team: g.Team, Flavor: g.Flavor, Resource: g.Resource,
			GPUs: g.Delta, AppliedAt: g.AppliedAt, ExpiresAt: g.ExpiresAt, Nominal: g.Nominal})
	}
	c.JSON(http.StatusOK, out)
}
