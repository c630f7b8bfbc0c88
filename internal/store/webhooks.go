package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// TeamWebhook is where a team's job endings are posted for chat tools.
type TeamWebhook struct {
	Team      string `gorm:"primaryKey"`
	URL       string `gorm:"column:url"`
	UpdatedBy string
	UpdatedAt time.Time
}

// WebhookDelivery is one job ending posted (or to be posted) to a team's webhook.
type WebhookDelivery struct {
	ID            int64
	Team          string
	URL           string `gorm:"column:url"`
	MomentID      int64
	Payload       json.RawMessage `gorm:"type:jsonb"`
	Attempts      int
	NextAttemptAt time.Time
	DeliveredAt   *time.Time
	FailedAt      *time.Time
	LastError     string
	LastStatus    *int
	CreatedAt     time.Time
}

// TeamWebhook returns the team's webhook, or ErrNoWebhook.
func (s *Store) TeamWebhook(ctx context.Context, team string) (TeamWebhook, error) {
	var w TeamWebhook
	err := s.db.WithContext(ctx).Where("team = ?", team).Take(&w).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return TeamWebhook{}, ErrNoWebhook
	}
	if err != nil {
		return TeamWebhook{}, fmt.Errorf("get webhook of team %s: %w", team, err)
	}
	return w, nil
}

// SetTeamWebhook sets the team's webhook URL; an empty URL removes it.
func (s *Store) SetTeamWebhook(ctx context.Context, w TeamWebhook) error {
	db := s.db.WithContext(ctx)
	if w.URL == "" {
		if err := db.Where("team = ?", w.Team).Delete(&TeamWebhook{}).Error; err != nil {
			return fmt.Errorf("remove webhook of team %s: %w", w.Team, err)
		}
		return nil
	}
	if w.UpdatedAt.IsZero() {
		w.UpdatedAt = time.Now().UTC()
	}
	err := db.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "team"}},
		DoUpdates: clause.AssignmentColumns([]string{"url", "updated_by", "updated_at"})}).Create(&w).Error
	if err != nil {
		return fmt.Errorf("set webhook of team %s: %w", w.Team, err)
	}
	return nil
}

// DueWebhookDeliveries returns up to limit deliveries neither delivered nor
// given up whose next attempt is due at now, oldest first.
func (s *Store) DueWebhookDeliveries(ctx context.Context, now time.Time, limit int) ([]WebhookDelivery, error) {
	var out []WebhookDelivery
	err := s.db.WithContext(ctx).Where("delivered_at IS NULL AND failed_at IS NULL AND next_attempt_at <= ?", now).
		Order("next_attempt_at, id").Limit(limitOr(limit, 20)).Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("list due webhook deliveries: %w", err)
	}
	return out, nil
}

// ClaimWebhookDelivery takes the delivery for one attempt: it counts the
// attempt and pushes its next attempt to retryAt, so a crash mid-post
// retries later and a second replica does not post it at the same time.
// It reports false when another replica claimed it first.
func (s *Store) ClaimWebhookDelivery(ctx context.Context, d WebhookDelivery, retryAt time.Time) (bool, error) {
	res := s.db.WithContext(ctx).Model(&WebhookDelivery{}).
		Where("id = ? AND attempts = ? AND delivered_at IS NULL AND failed_at IS NULL", d.ID, d.Attempts).
		Updates(map[string]any{"attempts": d.Attempts + 1, "next_attempt_at": retryAt})
	if res.Error != nil {
		return false, fmt.Errorf("claim webhook delivery %d: %w", d.ID, res.Error)
	}
	return res.RowsAffected == 1, nil
}

// WebhookDelivered notes a successful attempt.
func (s *Store) WebhookDelivered(ctx context.Context, id int64, status int, at time.Time) error {
	err := s.db.WithContext(ctx).Model(&WebhookDelivery{}).Where("id = ?", id).
		Updates(map[string]any{"delivered_at": at, "last_status": status, "last_error": ""}).Error
	if err != nil {
		return fmt.Errorf("mark webhook delivery %d delivered: %w", id, err)
	}
	return nil
}

// WebhookFailed notes a failed attempt at at and when to try next; with
// giveUp the delivery is not tried again.
func (s *Store) WebhookFailed(ctx context.Context, id int64, status *int, msg string, giveUp bool, at, retryAt time.Time) error {
	upd := map[string]any{"last_error": msg, "last_status": status, "next_attempt_at": retryAt}
	if giveUp {
		upd["failed_at"] = at
	}
	if err := s.db.WithContext(ctx).Model(&WebhookDelivery{}).Where("id = ?", id).Updates(upd).Error; err != nil {
		return fmt.Errorf("mark webhook delivery %d failed: %w", id, err)
	}
	return nil
}

// TeamWebhookDeliveries returns the team's latest deliveries, newest first.
func (s *Store) TeamWebhookDeliveries(ctx context.Context, team string, limit int) ([]WebhookDelivery, error) {
	var out []WebhookDelivery
	if err := s.db.WithContext(ctx).Where("team = ?", team).Order("created_at DESC, id DESC").Limit(limitOr(limit, 10)).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list webhook deliveries of team %s: %w", team, err)
	}
	return out, nil
}
