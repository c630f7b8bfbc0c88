package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// AuditEntry is one row of the append-only audit log.
type AuditEntry struct {
	ID     int64
	At     time.Time
	Actor  string
	Action string
	Target string
	Detail json.RawMessage `gorm:"type:jsonb"`
	IP     string
	Via    string
}

// TableName tells gorm the table's name.
func (AuditEntry) TableName() string { return "audit_log" }

// detailOrEmpty is the entry's detail, an empty JSON object when it has none.
func (e AuditEntry) detailOrEmpty() json.RawMessage {
	if len(e.Detail) == 0 {
		return json.RawMessage("{}")
	}
	return e.Detail
}

// AppendAudit inserts an audit entry.
func (s *Store) AppendAudit(ctx context.Context, e AuditEntry) error {
	if err := appendAudit(s.db.WithContext(ctx), e); err != nil {
		return fmt.Errorf("append audit entry %s by %s: %w", e.Action, e.Actor, err)
	}
	return nil
}

// AuditFilter narrows an audit log listing; empty fields match everything.
type AuditFilter struct {
	Actor  string
	Action string
	Limit  int
}

// AuditEntries lists audit entries, newest first.
func (s *Store) AuditEntries(ctx context.Context, f AuditFilter) ([]AuditEntry, error) {
	q := s.db.WithContext(ctx).Order("at DESC, id DESC")
	if f.Actor != "" {
		q = q.Where("actor = ?", f.Actor)
	}
	if f.Action != "" {
		q = q.Where("action = ?", f.Action)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	var out []AuditEntry
	if err := q.Limit(limit).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list audit entries: %w", err)
	}
	return out, nil
}
