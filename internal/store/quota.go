package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Statuses of a quota request.
const (
	QuotaOpen      = "open"
	QuotaApproved  = "approved"
	QuotaRejected  = "rejected"
	QuotaWithdrawn = "withdrawn"
)

// ErrNotOpen is returned when a request was already decided or withdrawn.
var ErrNotOpen = errors.New("quota request is no longer open")

// QuotaRequest asks for more (or less) nominal quota of one resource in one
// flavor for a team, until a date or until revoked.
type QuotaRequest struct {
	ID       int64
	Team     string
	Flavor   string
	Resource string
	Delta    int64
	// Until is when a granted change ends; nil means until revoked.
	Until           *time.Time
	Reason          string
	Requester       string
	Status          string
	DecidedBy       string
	DecidedAt       *time.Time
	DecisionComment string
	CreatedAt       time.Time
}

// QuotaGrant is an approved delta applied to a team's ClusterQueue.
type QuotaGrant struct {
	ID           int64
	RequestID    int64
	Team         string
	ClusterQueue string
	Flavor       string
	Resource     string
	Delta        int64
	AppliedAt    time.Time
	ExpiresAt    *time.Time
	RevertedAt   *time.Time
}

// Decision is what a decider says about an open request.
type Decision struct {
	Approve   bool
	DecidedBy string
	Comment   string
	At        time.Time
	// Grant is recorded when the request is approved.
	Grant *QuotaGrant
	// Audit entries and the requester's Notice are written in the same
	// transaction as the decision: all of them commit, or none.
	Audit  []AuditEntry
	Notice *Notification
}

// CreateQuotaRequest inserts an open request and returns it with its id.
func (s *Store) CreateQuotaRequest(ctx context.Context, r QuotaRequest) (QuotaRequest, error) {
	r.Status = QuotaOpen
	if err := s.db.WithContext(ctx).Omit("id").Create(&r).Error; err != nil {
		return QuotaRequest{}, fmt.Errorf("create quota request of %s for %s: %w", r.Requester, r.Team, err)
	}
	return r, nil
}

// QuotaRequestByID returns the request, or ErrNotFound.
func (s *Store) QuotaRequestByID(ctx context.Context, id int64) (QuotaRequest, error) {
	var r QuotaRequest
	if err := s.db.WithContext(ctx).Take(&r, id).Error; err != nil {
		return QuotaRequest{}, fmt.Errorf("get quota request %d: %w", id, notFound(err))
	}
	return r, nil
}

// QuotaRequestsBy lists the requests a user filed, newest first.
func (s *Store) QuotaRequestsBy(ctx context.Context, requester string, limit int) ([]QuotaRequest, error) {
	var out []QuotaRequest
	if err := s.db.WithContext(ctx).Where("requester = ?", requester).
		Order("created_at DESC, id DESC").Limit(limitOr(limit, 100)).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list quota requests of %s: %w", requester, err)
	}
	return out, nil
}

// OpenQuotaRequests lists open requests of the given teams (all teams when
// teams is nil), oldest first.
func (s *Store) OpenQuotaRequests(ctx context.Context, teams []string) ([]QuotaRequest, error) {
	q := s.db.WithContext(ctx).Where("status = ?", QuotaOpen)
	if teams != nil {
		q = q.Where("team IN ?", nonNil(teams))
	}
	var out []QuotaRequest
	if err := q.Order("created_at, id").Limit(500).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list open quota requests: %w", err)
	}
	return out, nil
}

// CountOpenQuotaRequests counts open requests of the given teams (all when
// teams is nil) not filed by the given user, for the approvals badge.
func (s *Store) CountOpenQuotaRequests(ctx context.Context, teams []string, except string) (int, error) {
	q := s.db.WithContext(ctx).Model(&QuotaRequest{}).Where("status = ? AND requester <> ?", QuotaOpen, except)
	if teams != nil {
		if len(teams) == 0 {
			return 0, nil
		}
		q = q.Where("team IN ?", teams)
	}
	var n int64
	if err := q.Count(&n).Error; err != nil {
		return 0, fmt.Errorf("count open quota requests: %w", err)
	}
	return int(n), nil
}

// WithdrawQuotaRequest marks the requester's open request withdrawn. With
// the row locked it calls undo, if given (undo may change the cluster;
// its error rolls everything back), and writes the audit entry undo
// returns in the same transaction. It returns ErrNotFound if the user filed
// no such request, ErrNotOpen if it was already decided.
func (s *Store) WithdrawQuotaRequest(ctx context.Context, id int64, requester string, at time.Time, undo func(QuotaRequest) (*AuditEntry, error)) (QuotaRequest, error) {
	var r QuotaRequest
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Where("requester = ?", requester).Take(&r, id).Error; err != nil {
			return notFound(err)
		}
		if r.Status != QuotaOpen {
			return ErrNotOpen
		}
		var entry *AuditEntry
		if undo != nil {
			var err error
			if entry, err = undo(r); err != nil {
				return err
			}
		}
		r.Status, r.DecidedBy, r.DecidedAt = QuotaWithdrawn, requester, &at
		if err := tx.Model(&r).Select("status", "decided_by", "decided_at").Updates(&r).Error; err != nil {
			return err
		}
		return sideEffects(tx, nil, entry)
	})
	if err != nil {
		return QuotaRequest{}, fmt.Errorf("withdraw quota request %d: %w", id, err)
	}
	return r, nil
}

// DecideQuotaRequest locks the open request, asks decide what to do (decide
// may change the cluster; returning an error rolls everything back), and
// records the decision, the grant, the audit entries and the notice in the
// same transaction.
func (s *Store) DecideQuotaRequest(ctx context.Context, id int64, decide func(QuotaRequest) (Decision, error)) (QuotaRequest, error) {
	var r QuotaRequest
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Take(&r, id).Error; err != nil {
			return notFound(err)
		}
		if r.Status != QuotaOpen {
			return ErrNotOpen
		}
		d, err := decide(r)
		if err != nil {
			return err
		}
		r.Status = QuotaRejected
		if d.Approve {
			r.Status = QuotaApproved
		}
		r.DecidedBy, r.DecidedAt, r.DecisionComment = d.DecidedBy, &d.At, d.Comment
		if err := tx.Model(&r).Select("status", "decided_by", "decided_at", "decision_comment").Updates(&r).Error; err != nil {
			return err
		}
		if d.Grant != nil {
			if err := tx.Omit("id").Create(d.Grant).Error; err != nil {
				return fmt.Errorf("record grant: %w", err)
			}
		}
		for _, e := range d.Audit {
			if err := appendAudit(tx, e); err != nil {
				return fmt.Errorf("audit %s: %w", e.Action, err)
			}
		}
		return sideEffects(tx, d.Notice, nil)
	})
	if err != nil {
		return QuotaRequest{}, fmt.Errorf("decide quota request %d: %w", id, err)
	}
	return r, nil
}

// ActiveGrants lists grants not yet reverted of the given teams (all when
// teams is nil), ending soonest first.
func (s *Store) ActiveGrants(ctx context.Context, teams []string) ([]QuotaGrant, error) {
	q := s.db.WithContext(ctx).Where("reverted_at IS NULL")
	if teams != nil {
		q = q.Where("team IN ?", nonNil(teams))
	}
	var out []QuotaGrant
	if err := q.Order("expires_at NULLS LAST, id").Limit(500).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list active grants: %w", err)
	}
	return out, nil
}

// GrantByRequest returns the grant of a request, or ErrNotFound.
func (s *Store) GrantByRequest(ctx context.Context, requestID int64) (QuotaGrant, error) {
	var g QuotaGrant
	if err := s.db.WithContext(ctx).Where("request_id = ?", requestID).Take(&g).Error; err != nil {
		return QuotaGrant{}, fmt.Errorf("get grant of request %d: %w", requestID, notFound(err))
	}
	return g, nil
}

// GrantReverted is what reverting a grant leaves in the database besides
// the grant's reverted_at: its audit entry and the requester's notice.
type GrantReverted struct {
	Audit  *AuditEntry
	Notice *Notification
}

// RevertDueGrant takes one grant due at now that no other replica is
// reverting (FOR UPDATE SKIP LOCKED), calls revert and marks the grant
// reverted, with the audit entry and notice revert returns, in the same
// transaction: a crash before the commit leaves the grant due and nothing
// written, a commit leaves all of it. It reports false when none is due.
func (s *Store) RevertDueGrant(ctx context.Context, now time.Time, revert func(QuotaGrant) (GrantReverted, error)) (QuotaGrant, bool, error) {
	var g QuotaGrant
	found := false
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		err := tx.Clauses(clause.Locking{Strength: "UPDATE", Options: "SKIP LOCKED"}).
			Where("reverted_at IS NULL AND expires_at IS NOT NULL AND expires_at <= ?", now).
			Order("expires_at, id").Take(&g).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		found = true
		done, err := revert(g)
		if err != nil {
			return err
		}
		g.RevertedAt = &now
		if err := tx.Model(&g).Update("reverted_at", now).Error; err != nil {
			return err
		}
		return sideEffects(tx, done.Notice, done.Audit)
	})
	if err != nil {
		return QuotaGrant{}, false, fmt.Errorf("revert due grant: %w", err)
	}
	return g, found, nil
}

// ReleaseOpenRequest locks request id if it is open and no one else holds
// it (FOR UPDATE SKIP LOCKED: a decision in flight holds it from its read to
// its commit), calls release and writes the audit entry release returns in
// the same transaction. It reports false, doing nothing, when the request is
// not open, is held, or does not exist.
func (s *Store) ReleaseOpenRequest(ctx context.Context, id int64, release func(QuotaRequest) (*AuditEntry, error)) (bool, error) {
	done := false
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var r QuotaRequest
		err := tx.Clauses(clause.Locking{Strength: "UPDATE", Options: "SKIP LOCKED"}).
			Where("status = ?", QuotaOpen).Take(&r, id).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		entry, err := release(r)
		if err != nil {
			return err
		}
		done = true
		return sideEffects(tx, nil, entry)
	})
	if err != nil {
		return false, fmt.Errorf("release open quota request %d: %w", id, err)
	}
	return done, nil
}

func limitOr(n, def int) int {
	if n <= 0 {
		return def
	}
	return n
}
