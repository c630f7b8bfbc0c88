package store

import (
	"context"
	"encoding/hex"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// APIToken is a personal API token. Only the SHA-256 hash of the secret is
// stored; Prefix is a non-secret head of it for recognising a token in lists.
// UserID is the owner; Username is the owner's username when it was made,
// for lists.
type APIToken struct {
	ID         int64
	UserID     int64
	Username   string
	Name       string
	Hash       []byte
	Prefix     string
	CreatedAt  time.Time
	ExpiresAt  time.Time
	LastUsedAt *time.Time
	RevokedAt  *time.Time
	// ReadOnly tokens may only read (GET).
	ReadOnly bool
}

// Active reports whether the token may be used at now.
func (t APIToken) Active(now time.Time) bool {
	return t.RevokedAt == nil && now.Before(t.ExpiresAt)
}

// CreateAPIToken stores a new token and returns it with its id.
func (s *Store) CreateAPIToken(ctx context.Context, t APIToken) (APIToken, error) {
	err := s.db.WithContext(ctx).Omit("id", "last_used_at", "revoked_at").Create(&t).Error
	s.told(TopicTokens)
	if err != nil {
		return APIToken{}, fmt.Errorf("create API token %q for %s: %w", t.Name, t.Username, err)
	}
	return t, nil
}

// APITokenByHash returns the token with this hash (active or not), or ErrNotFound.
// It is kept (KeepReads) until a token or user changes, but for its last
// use: LastUsedAt may be older than the row's.
func (s *Store) APITokenByHash(ctx context.Context, hash []byte) (APIToken, error) {
	return s.kept.tokens.Get(ctx, hex.EncodeToString(hash), func(ctx context.Context) (APIToken, error) {
		var t APIToken
		if err := s.db.WithContext(ctx).Where("hash = ?", hash).Take(&t).Error; err != nil {
			return APIToken{}, fmt.Errorf("get API token by hash: %w", notFound(err))
		}
		return t, nil
	})
}

// UserByTokenHash returns the owner of the API token with this hash, or
// ErrNotFound. It needs no answer from APITokenByHash first, so a request
// can ask both at once.
func (s *Store) UserByTokenHash(ctx context.Context, hash []byte) (User, error) {
	return s.kept.owners.Get(ctx, hex.EncodeToString(hash), func(ctx context.Context) (User, error) {
		var u User
		if err := s.db.WithContext(ctx).Where("id = (SELECT user_id FROM api_tokens WHERE hash = ?)", hash).Take(&u).Error; err != nil {
			return User{}, fmt.Errorf("get owner of API token: %w", notFound(err))
		}
		return u, nil
	})
}

// APITokens lists the user's tokens, newest first, including revoked and expired ones.
func (s *Store) APITokens(ctx context.Context, userID int64) ([]APIToken, error) {
	var ts []APIToken
	if err := s.db.WithContext(ctx).Where("user_id = ?", userID).Order("created_at DESC, id DESC").Find(&ts).Error; err != nil {
		return nil, fmt.Errorf("list API tokens of user %d: %w", userID, err)
	}
	return ts, nil
}

// AllAPITokens lists everyone's tokens for admins, newest first, at most limit.
func (s *Store) AllAPITokens(ctx context.Context, limit int) ([]APIToken, error) {
	var ts []APIToken
	if err := s.db.WithContext(ctx).Order("created_at DESC, id DESC").Limit(limit).Find(&ts).Error; err != nil {
		return nil, fmt.Errorf("list all API tokens: %w", err)
	}
	return ts, nil
}

// RevokeAPIToken revokes the user's token id at the given time and returns
// it. It returns ErrNotFound when the user has no such unrevoked token.
func (s *Store) RevokeAPIToken(ctx context.Context, userID, id int64, at time.Time) (APIToken, error) {
	return s.revokeAPIToken(ctx, s.db.WithContext(ctx).Where("user_id = ?", userID), id, at)
}

// RevokeAnyAPIToken revokes token id, whoever owns it (admins), and returns
// it. It returns ErrNotFound when there is no such unrevoked token.
func (s *Store) RevokeAnyAPIToken(ctx context.Context, id int64, at time.Time) (APIToken, error) {
	return s.revokeAPIToken(ctx, s.db.WithContext(ctx), id, at)
}

func (s *Store) revokeAPIToken(ctx context.Context, scope *gorm.DB, id int64, at time.Time) (APIToken, error) {
	res := scope.Model(&APIToken{}).
		Where("id = ? AND revoked_at IS NULL", id).
		Update("revoked_at", at)
	s.told(TopicTokens)
	if res.Error != nil {
		return APIToken{}, fmt.Errorf("revoke API token %d: %w", id, res.Error)
	}
	if res.RowsAffected == 0 {
		return APIToken{}, fmt.Errorf("revoke API token %d: %w", id, ErrNotFound)
	}
	var t APIToken
	if err := s.db.WithContext(ctx).Where("id = ?", id).Take(&t).Error; err != nil {
		return APIToken{}, fmt.Errorf("get API token %d: %w", id, notFound(err))
	}
	return t, nil
}

// TouchAPIToken records that the token was used at the given time.
func (s *Store) TouchAPIToken(ctx context.Context, id int64, at time.Time) error {
	if err := s.db.WithContext(ctx).Model(&APIToken{}).Where("id = ?", id).Update("last_used_at", at).Error; err != nil {
		return fmt.Errorf("touch API token %d: %w", id, err)
	}
	return nil
}
