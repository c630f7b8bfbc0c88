package web

import (
	"errors"
	"net/http"
	"slices"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/internal/kube"
	"github.com/gantry-dev/gantry/internal/store"
	"github.com/gantry-dev/gantry/views"
)

// quotaList shows the request form, the user's requests and their teams' active grants.
func (h *handler) quotaList(c *gin.Context) {
	h.renderQuotaPage(c, http.StatusOK, views.QuotaForm{})
}

func (h *handler) renderQuotaPage(c *gin.Context, status int, form views.QuotaForm) {
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
	p := views.QuotaPageProps{Teams: memberTeams(u), Form: form}
	flavors, err := h.Quota.Board.Flavors()
	if err != nil {
		h.Log.WarnContext(ctx, "list flavors", "err", err)
		p.ClusterError = "The cluster could not be read just now, so pools and current quota may be missing."
	}
	for _, f := range flavors {
		p.Flavors = append(p.Flavors, views.QuotaFlavorOption{Flavor: f.Flavor, Resources: f.Resources})
	}
	for _, r := range mine {
		p.Mine = append(p.Mine, requestRow(r))
	}
	p.Grants = h.grantRows(c, grants)
	h.render(c, status, views.QuotaPage(h.nav(c, "quota-requests"), p))
}

func requestRow(r store.QuotaRequest) views.QuotaRequestRow {
	return views.QuotaRequestRow{
		ID: r.ID, Team: r.Team, Flavor: r.Flavor, Resource: r.Resource, Delta: r.Delta, Until: r.Until,
		Reason: r.Reason, Requester: r.Requester, Status: r.Status, DecidedBy: r.DecidedBy, Comment: r.DecisionComment,
		CreatedAt: r.CreatedAt, DecidedAt: r.DecidedAt, CanWithdraw: r.Status == store.QuotaOpen,
	}
}

// grantRows lists grants with the team's quota as the cluster has it now.
func (h *handler) grantRows(c *gin.Context, grants []store.QuotaGrant) []views.QuotaGrantRow {
	out := make([]views.QuotaGrantRow, 0, len(grants))
	for _, g := range grants {
		row := views.QuotaGrantRow{RequestID: g.RequestID, Team: g.Team, Flavor: g.Flavor, Resource: g.Resource,
			Delta: g.Delta, AppliedAt: g.AppliedAt, ExpiresAt: g.ExpiresAt, Nominal: -1}
		line, err := h.Quota.Board.Line(g.Team, g.Flavor, g.Resource)
		switch {
		case err == nil:
			row.Nominal = line.Nominal
		case !errors.Is(err, kube.ErrNotFound):
			h.Log.WarnContext(c.Request.Context(), "read quota line", "team", g.Team, "err", err)
		}
		out = append(out, row)
	}
	slices.SortStableFunc(out, func(a, b views.QuotaGrantRow) int {
		switch {
		case a.ExpiresAt == nil && b.ExpiresAt == nil:
			return 0
		case a.ExpiresAt == nil:
			return 1
		case b.ExpiresAt == nil:
			return -1
		default:
			return a.ExpiresAt.Compare(*b.ExpiresAt)
		}
	})
	return out
}
