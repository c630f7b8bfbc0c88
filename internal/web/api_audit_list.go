package web

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/views"
)

// apiAuditEntry is one entry of the audit log.
type apiAuditEntry struct {
	ID     int64           `json:"id"`
	At     time.Time       `json:"at"`
	Actor  string          `json:"actor"`
	Action string          `json:"action"`
	Target string          `json:"target"`
	Detail json.RawMessage `json:"detail"`
	Via    string          `json:"via"`
}

// apiAuditPage is a page of the audit log, newest first; Next is the URL
// of the following page, empty on the last.
type apiAuditPage struct {
	Entries []apiAuditEntry `json:"entries"`
	Next    string          `json:"next,omitempty"`
}

// apiAuditList queries the audit log by actor, action, team and date, as
// the audit page does, a page at a time.
func (h *handler) apiAuditList(c *gin.Context) {
	f := views.AuditFilter{
		Actor:  strings.TrimSpace(c.Query("actor")),
		Action: strings.TrimSpace(c.Query("action")),
		Team:   strings.TrimSpace(c.Query("team")),
		From:   strings.TrimSpace(c.Query("from")),
		To:     strings.TrimSpace(c.Query("to")),
	}
	limit := auditPageSize
	if n, err := strconv.Atoi(c.Query("limit")); err == nil && n > 0 {
		limit = min(n, 500)
	}
	q, problem := auditQuery(f, c.Query("before"), limit)
	if problem != "" {
		h.apiInvalid(c, map[string]string{"dates": problem})
		return
	}
	entries, more, err := h.Quota.Store.AuditPage(c.Request.Context(), q)
	if err != nil {
		h.fail(c, err)
		return
	}
	out := apiAuditPage{Entries: make([]apiAuditEntry, 0, len(entries))}
	for _, e := range entries {
		detail := e.Detail
		if len(detail) == 0 {
			detail = json.RawMessage("{}")
		}
		out.Entries = append(out.Entries, apiAuditEntry{ID: e.ID, At: e.At, Actor: e.Actor, Action: e.Action, Target: e.Target, Detail: detail, Via: e.Via})
	}
	if more && len(entries) > 0 {
		v := c.Request.URL.Query()
		v.Set("before", strconv.FormatInt(entries[len(entries)-1].ID, 10))
		out.Next = (&url.URL{Path: "/api/v1/audit", RawQuery: v.Encode()}).String()
	}
	c.JSON(http.StatusOK, out)
}
