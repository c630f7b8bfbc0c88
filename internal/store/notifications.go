package store

import (
	"context"
	"fmt"
	"time"
)

// Notification is a message for one user inside the portal.
type Notification struct {
	ID        int64
	Username  string
	Text      string
	Link      string
	CreatedAt time.Time
	ReadAt    *time.Time
}

// Notify stores a notification for its user.
func (s *Store) Notify(ctx context.Context, n Notification) error {
	if err := s.db.WithContext(ctx).Omit("id").Create(&n).Error; err != nil {
		return fmt.Errorf("notify %s: %w", n.Username, err)
	}
	return nil
}

// Notifications lists the user's notifications, newest first.
func (s *Store) Notifications(ctx context.Context, username string, limit int) ([]Notification, error) {
	var out []Notification
	if err := s.db.WithContext(ctx).Where("username = ?", username).
		Order("created_at DESC, id DESC").Limit(limitOr(limit, 50)).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list notifications of %s: %w", username, err)
	}
	return out, nil
}

// UnreadNotifications counts the user's unread notifications.
func (s *Store) UnreadNotifications(ctx context.Context, username string) (int, error) {
	var n int64
	if err := s.db.WithContext(ctx).Model(&Notification{}).Where("username = ? AND read_at IS NULL", username).Count(&n).Error; err != nil {
		return 0, fmt.Errorf("count unread notifications of %s: %w", username, err)
	}
	return int(n), nil
}

// MarkNotificationsRead marks all the user's notifications read.
func (s *Store) MarkNotificationsRead(ctx context.Context, username string, at time.Time) error {
	err := s.db.WithContext(ctx).Model(&Notification{}).Where("username = ? AND read_at IS NULL", username).Update("read_at", at).Error
	if err != nil {
		return fmt.Errorf("mark notifications of %s read: %w", username, err)
	}
	return nil
}
