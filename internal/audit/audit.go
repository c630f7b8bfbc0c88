// Package audit writes the portal's append-only audit log: every login,
// logout, API token change and every other state change.
package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/gantry-dev/gantry/internal/store"
)

// Actions recorded in the audit log.
const (
	ActionLogin       = "login"
	ActionLoginFailed = "login.failed"
	ActionLogout      = "logout"
	ActionTokenCreate = "token.create"
	ActionTokenRevoke = "token.revoke"
	ActionTeamsSeeded = "teams.seed"
	SystemActor       = "system"
	ViaBrowser        = "browser"
	ViaSystem         = "system"
)

// Event is one thing that happened, by whom, to what.
type Event struct {
	Actor  string
	Action string
	Target string
	Detail map[string]any
	IP     string
	// Via is "browser", "token:<id>" or "system".
	Via string
}

// Appender is the storage the log writes to.
type Appender interface {
	AppendAudit(ctx context.Context, e store.AuditEntry) error
}

// Log is the append-only audit log writer.
type Log struct {
	store Appender
	now   func() time.Time
}

// New returns a writer appending to s, stamping entries with now (time.Now if nil).
func New(s Appender, now func() time.Time) *Log {
	if now == nil {
		now = time.Now
	}
	return &Log{store: s, now: now}
}

// Record appends the event.
func (l *Log) Record(ctx context.Context, e Event) error {
	entry, err := l.Entry(e)
	if err != nil {
		return err
	}
	if err := l.store.AppendAudit(ctx, entry); err != nil {
		return fmt.Errorf("audit %s by %s: %w", e.Action, e.Actor, err)
	}
	return nil
}

// Entry is the row Record would append, for a caller that writes it in
// the same transaction as the change it records.
func (l *Log) Entry(e Event) (store.AuditEntry, error) {
	detail := []byte("{}")
	if len(e.Detail) > 0 {
		var err error
		if detail, err = json.Marshal(e.Detail); err != nil {
			return store.AuditEntry{}, fmt.Errorf("audit %s by %s: encode detail: %w", e.Action, e.Actor, err)
		}
	}
	via := e.Via
	if via == "" {
		via = ViaBrowser
	}
	return store.AuditEntry{
		At:     l.now().UTC(),
		Actor:  e.Actor,
		Action: e.Action,
		Target: e.Target,
		Detail: detail,
		IP:     e.IP,
		Via:    via,
	}, nil
}
