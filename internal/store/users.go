package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// User is a person who has signed in at least once, keyed on the IdP's
// Issuer and Subject (sub). Username is the IdP's preferred_username, for
// display and impersonation only: two people may share one. Groups are
// those of the last login and are what API tokens act with.
type User struct {
	ID          int64
	Issuer      string
	Subject     string
	Username    string
	Name        string
	Email       string
	Groups      StringList
	LastLoginAt time.Time
	CreatedAt   time.Time
}

// RecordLogin creates or updates the user with issuer and subject with the
// identity from a login, and returns the stored row. A row from before
// accounts were keyed on the subject (issuer ”) is claimed by its subject,
// or by its username when its subject was never learnt.
func (s *Store) RecordLogin(ctx context.Context, u User) (User, error) {
	if u.Issuer == "" || u.Subject == "" {
		return User{}, fmt.Errorf("record login of %s: issuer and subject are required", u.Username)
	}
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var legacy User
		err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).
			Where("issuer = '' AND (subject = ? OR (subject = '' AND username = ?))", u.Subject, u.Username).
			Order("subject DESC, id").Take(&legacy).Error
		switch {
		case errors.Is(err, gorm.ErrRecordNotFound):
		case err != nil:
			return err
		default:
			var taken int64
			if err := tx.Model(&User{}).Where("issuer = ? AND subject = ?", u.Issuer, u.Subject).Count(&taken).Error; err != nil {
				return err
			}
			if taken == 0 {
				return tx.Model(&legacy).Select("issuer", "subject").Updates(User{Issuer: u.Issuer, Subject: u.Subject}).Error
			}
		}
		return nil
	})
	if err != nil {
		return User{}, fmt.Errorf("record login of %s: claim account: %w", u.Username, err)
	}
	err = s.db.WithContext(ctx).Clauses(clause.OnConflict{
		Columns:     []clause.Column{{Name: "issuer"}, {Name: "subject"}},
		TargetWhere: clause.Where{Exprs: []clause.Expression{clause.Expr{SQL: "issuer <> ''"}}},
		DoUpdates:   clause.AssignmentColumns([]string{"username", "name", "email", "groups", "last_login_at"}),
	}).Omit("id", "created_at").Create(&u).Error
	s.told(TopicTokens)
	if err != nil {
		return User{}, fmt.Errorf("record login of %s: %w", u.Username, err)
	}
	return s.userBySubject(ctx, u.Issuer, u.Subject)
}

func (s *Store) userBySubject(ctx context.Context, issuer, subject string) (User, error) {
	var u User
	if err := s.db.WithContext(ctx).Where("issuer = ? AND subject = ?", issuer, subject).Take(&u).Error; err != nil {
		return User{}, fmt.Errorf("get user %s at %s: %w", subject, issuer, notFound(err))
	}
	return u, nil
}

// UserByID returns the user, or ErrNotFound. It is kept (KeepReads) until
// the users table changes: every signed-in view resolves its user from it
// (auth.SessionUserTTL), and read each time, a view in every few made a
// round trip more than the others, on a busy machine the slowest of them.
// Its groups' slice is shared and must not be modified.
func (s *Store) UserByID(ctx context.Context, id int64) (User, error) {
	return s.kept.users.Get(ctx, strconv.FormatInt(id, 10), func(ctx context.Context) (User, error) {
		var u User
		if err := s.db.WithContext(ctx).Where("id = ?", id).Take(&u).Error; err != nil {
			return User{}, fmt.Errorf("get user %d: %w", id, notFound(err))
		}
		return u, nil
	})
}

// UsersByUsername returns every user with this username, oldest first;
// usernames are not unique.
func (s *Store) UsersByUsername(ctx context.Context, username string) ([]User, error) {
	var us []User
	if err := s.db.WithContext(ctx).Where("username = ?", username).Order("id").Find(&us).Error; err != nil {
		return nil, fmt.Errorf("list users named %s: %w", username, err)
	}
	return us, nil
}

// UserByUsername returns the most recently signed-in user with this
// username, or ErrNotFound. Usernames are not unique: authentication never
// uses this, only lookups for display.
func (s *Store) UserByUsername(ctx context.Context, username string) (User, error) {
	var u User
	if err := s.db.WithContext(ctx).Where("username = ?", username).Order("last_login_at DESC, id DESC").Take(&u).Error; err != nil {
		return User{}, fmt.Errorf("get user %s: %w", username, notFound(err))
	}
	return u, nil
}
