package web

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/audit"
	"github.com/gantry-dev/gantry/internal/quota"
	"github.com/gantry-dev/gantry/internal/store"
	"github.com/gantry-dev/gantry/internal/teams/teamadmin"
	"github.com/gantry-dev/gantry/views"
)

// auditActions are offered in the audit filter.
var auditActions = []string{
	audit.ActionLogin, audit.ActionLoginFailed, audit.ActionLogout, audit.ActionTokenCreate, audit.ActionTokenRevoke, audit.ActionTeamsSeeded,
	quota.ActionRequest, quota.ActionWithdraw, quota.ActionApprove, quota.ActionReject, quota.ActionGrant, quota.ActionExpire, quota.ActionRelease,
	teamadmin.ActionCreate, teamadmin.ActionUpdate, teamadmin.ActionRetire,
}

const auditPageSize = 50

// auditList lets admins browse the audit log by actor, action, team and
// date, newest first, a page at a time.
func (h *handler) auditList(c *gin.Context) {
	f := views.AuditFilter{
		Actor:  strings.TrimSpace(c.Query("actor")),
		Action: strings.TrimSpace(c.Query("action")),
		Team:   strings.TrimSpace(c.Query("team")),
		From:   strings.TrimSpace(c.Query("from")),
		To:     strings.TrimSpace(c.Query("to")),
	}
	p := views.AuditProps{Filter: f, Actions: auditActions}
	q, problem := auditQuery(f, c.Query("before"), auditPageSize)
	p.Error = problem
	status := http.StatusOK
	if p.Error != "" {
		h.render(c, http.StatusUnprocessableEntity, views.AuditPage(h.nav(c, "audit"), p))
		return
	}
	entries, more, err := h.Quota.Store.AuditPage(c.Request.Context(), q)
	if err != nil {
		h.fail(c, err)
		return
	}
	for _, e := range entries {
		p.Entries = append(p.Entries, views.AuditRow{ID: e.ID, At: e.At, Actor: e.Actor, Action: e.Action, Target: e.Target, Detail: string(e.Detail), Via: e.Via})
	}
	if more && len(entries) > 0 {
		v := url.Values{}
		for k, val := range map[string]string{"actor": f.Actor, "action": f.Action, "team": f.Team, "from": f.From, "to": f.To} {
			if val != "" {
				v.Set(k, val)
			}
		}
		v.Set("before", strconv.FormatInt(entries[len(entries)-1].ID, 10))
		p.NextURL = "/admin/audit?" + v.Encode()
	}
	h.render(c, status, views.AuditPage(h.nav(c, "audit"), p))
}

// auditQuery is the store's query for a filter as the page and the API take
// it; problem says in words when a date does not read.
func auditQuery(f views.AuditFilter, before string, limit int) (q store.AuditQuery, problem string) {
	q = store.AuditQuery{Actor: f.Actor, Action: f.Action, Team: f.Team, Limit: limit}
	if f.From != "" {
		t, err := time.Parse(time.DateOnly, f.From)
		if err != nil {
			problem = "Enter dates as YYYY-MM-DD."
		}
		q.From = t
	}
	if f.To != "" {
		t, err := time.Parse(time.DateOnly, f.To)
		if err != nil {
			problem = "Enter dates as YYYY-MM-DD."
		}
		q.To = t.Add(24 * time.Hour) // the whole last day
	}
	if b, err := strconv.ParseInt(before, 10, 64); err == nil {
		q.Before = b
	}
	return q, problem
}
