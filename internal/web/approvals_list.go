package web

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/internal/store"
	"github.com/gantry-dev/gantry/views"
)

// approvalsList shows the open requests a lead or admin decides, each with
// the team's quota and usage, the cohort's free capacity and the pool's size.
func (h *handler) approvalsList(c *gin.Context) {
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
	p := views.ApprovalsProps{Grants: h.grantRows(c, grants)}
	p.Requests, p.ClusterError, err = h.approvalRows(c, u, open)
	if err != nil {
		h.fail(c, err)
		return
	}
	h.render(c, http.StatusOK, views.ApprovalsPage(h.nav(c, "approvals"), p))
}

// approvalRows are the open requests as a decider sees them: each with the
// team's quota and usage, the cohort's free capacity, the pool's size, the
// ceiling and, for a lead, why they cannot approve it. clusterError says
// in words when the cluster could not be read.
func (h *handler) approvalRows(c *gin.Context, u *auth.User, open []store.QuotaRequest) (rows []views.ApprovalRow, clusterError string, err error) {
	ctx := c.Request.Context()
	for _, r := range open {
		row := views.ApprovalRow{QuotaRequestRow: requestRow(r), Own: r.Requester == u.Username}
		line, err := h.Quota.Board.Line(r.Team, r.Flavor, r.Resource)
		if err != nil {
			h.Log.WarnContext(ctx, "read quota line", "team", r.Team, "err", err)
			clusterError = "The cluster could not be read just now, so some quota figures are missing."
		} else {
			row.Known = true
			row.Nominal, row.Used, row.Pending, row.LongestWait = line.Nominal, line.Used, line.Pending, line.LongestWait
			row.NewNominal = max(line.Nominal+r.Delta, 0)
			row.CohortFree, row.CohortNominal, row.Physical = line.CohortFree, line.CohortNominal, line.Physical
			if line.ExceedsPhysical(r.Delta) {
				row.PhysicalWarning = fmt.Sprintf("Warning: the cohort would hold %d %s of quota in %s, but the pool's nodes have only %d. Workloads may wait even within quota.",
					line.CohortNominal+r.Delta, r.Resource, r.Flavor, line.Physical)
			}
		}
		ceiling, err := h.Quota.Store.Ceiling(ctx, r.Team, r.Flavor, r.Resource)
		switch {
		case err == nil:
			row.Ceiling, row.HasCeiling = ceiling.Ceiling, true
		case !errors.Is(err, store.ErrNotFound):
			return nil, "", err
		}
		if u.Role != auth.RoleAdmin && r.Delta > 0 {
			switch {
			case !row.HasCeiling:
				row.CannotApprove = "No ceiling is set for this pool, so only an admin can approve an increase. You can still reject it."
			case row.Known && row.NewNominal > row.Ceiling:
				row.CannotApprove = fmt.Sprintf("This would take the team above its ceiling of %d, so only an admin can approve it. You can still reject it.", row.Ceiling)
			}
		}
		rows = append(rows, row)
	}
	return rows, clusterError, nil
}
