package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm/clause"
)

// User is a person who has signed in at least once. Groups are those of
// the last login and are what API tokens act with.
type User struct {
	ID          int64
	Username    string
	Name        string
	Email       string
	Groups      StringList
	LastLoginAt time.Time
	CreatedAt   time.Time
}

// RecordLogin creates or updates the user with the identity from a login.
func (s *Store) RecordLogin(ctx context.Context, u User) error {
	err := s.db.WithContext(ctx).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "username"}},
		DoUpdates: clause.AssignmentColumns([]string{"name", "email", "groups", "last_login_at"}),
	}).Omit("id", "created_at").Create(&u).Error
	if err != nil {
		return fmt.Errorf("record login of %s: %w", u.Username, err)
	}
	return nil
}

// UserByUsername returns the user, or ErrNotFound.
func (s *Store) UserByUsername(ctx context.Context, username string) (User, error) {
	var u User
	if err := s.db.WithContext(ctx).Where("username = ?", username).Take(&u).Error; err != nil {
		return User{}, fmt.Errorf("get user %s: %w", username, notFound(err))
	}
	return u, nil
}
