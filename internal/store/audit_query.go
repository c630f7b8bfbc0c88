package store

import (
	"context"
	"fmt"
	"time"
)

// AuditQuery filters and pages the audit log for the admins' browser.
// Empty fields match everything; paging is by keyset (Before is the id of
// the last entry of the previous page), so deep pages stay cheap.
type AuditQuery struct {
	Actor  string
	Action string
	Team   string
	From   time.Time
	To     time.Time
	Before int64
	Limit  int
}

// AuditPage returns up to q.Limit entries, newest first, and whether more follow.
func (s *Store) AuditPage(ctx context.Context, q AuditQuery) ([]AuditEntry, bool, error) {
	db := s.db.WithContext(ctx).Order("at DESC, id DESC")
	if q.Actor != "" {
		db = db.Where("actor = ?", q.Actor)
	}
	if q.Action != "" {
		db = db.Where("action = ?", q.Action)
	}
	if q.Team != "" {
		db = db.Where("detail ->> 'team' = ?", q.Team)
	}
	if !q.From.IsZero() {
		db = db.Where("at >= ?", q.From)
	}
	if !q.To.IsZero() {
		db = db.Where("at < ?", q.To)
	}
	if q.Before > 0 {
		db = db.Where("(at, id) < (SELECT at, id FROM audit_log WHERE id = ?)", q.Before)
	}
	limit := limitOr(q.Limit, 50)
	var out []AuditEntry
	if err := db.Limit(limit + 1).Find(&out).Error; err != nil {
		return nil, false, fmt.Errorf("page audit log: %w", err)
	}
	more := len(out) > limit
	if more {
		out = out[:limit]
	}
	return out, more, nil
}
