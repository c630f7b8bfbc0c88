package store

import (
	"context"

	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// NotebookShare records that a notebook's owner let the team open it.
type NotebookShare struct {
	Team     string
	Name     string
	SharedBy string
	SharedAt time.Time
}

// ShareNotebook lets the notebook's team open it; sharing again keeps the
// first record.
func (s *Store) ShareNotebook(ctx context.Context, sh NotebookShare) error {
	err := s.db.WithContext(ctx).Clauses(clause.OnConflict{DoNothing: true}).Create(&sh).Error
	if err != nil {
		return fmt.Errorf("share notebook %s/%s: %w", sh.Team, sh.Name, err)
	}
	return nil
}

// UnshareNotebook takes the team's access away again (only the owner opens it).
func (s *Store) UnshareNotebook(ctx context.Context, team, name string) error {
	if err := s.db.WithContext(ctx).Where("team = ? AND name = ?", team, name).Delete(&NotebookShare{}).Error; err != nil {
		return fmt.Errorf("unshare notebook %s/%s: %w", team, name, err)
	}
	return nil
}

// NotebookShared returns the notebook's share, or ErrNotFound when only its
// owner may open it.
func (s *Store) NotebookShared(ctx context.Context, team, name string) (NotebookShare, error) {
	var sh NotebookShare
	if err := s.db.WithContext(ctx).Where("team = ? AND name = ?", team, name).Take(&sh).Error; err != nil {
		return NotebookShare{}, fmt.Errorf("notebook share of %s/%s: %w", team, name, notFound(err))
	}
	return sh, nil
}

// EndpointKey is a key for calling one inference endpoint through the
// portal. Only the SHA-256 hash of the secret is stored; Prefix is a
// non-secret head of it for recognising a key in lists.
type EndpointKey struct {
	ID        int64
	Team      string
	Name      string
	Label     string
	Hash      []byte
	Prefix    string
	CreatedBy string
	CreatedAt time.Time
	ExpiresAt time.Time
	RevokedAt *time.Time
	RevokedBy *string
}

// Active reports whether the key may be used at now.
func (k EndpointKey) Active(now time.Time) bool {
	return k.RevokedAt == nil && now.Before(k.ExpiresAt)
}

// CreateEndpointKey stores a new key and returns it with its id.
func (s *Store) CreateEndpointKey(ctx context.Context, k EndpointKey) (EndpointKey, error) {
	if err := s.db.WithContext(ctx).Omit("id", "revoked_at", "revoked_by").Create(&k).Error; err != nil {
		return EndpointKey{}, fmt.Errorf("create key %q of endpoint %s/%s: %w", k.Label, k.Team, k.Name, err)
	}
	return k, nil
}

// EndpointKeyByHash returns the key with this hash (active or not), or ErrNotFound.
func (s *Store) EndpointKeyByHash(ctx context.Context, hash []byte) (EndpointKey, error) {
	var k EndpointKey
	if err := s.db.WithContext(ctx).Where("hash = ?", hash).Take(&k).Error; err != nil {
		return EndpointKey{}, fmt.Errorf("get endpoint key by hash: %w", notFound(err))
	}
	return k, nil
}

// EndpointKeys lists the endpoint's keys, newest first, revoked and expired ones included.
func (s *Store) EndpointKeys(ctx context.Context, team, name string) ([]EndpointKey, error) {
	var ks []EndpointKey
	if err := s.db.WithContext(ctx).Where("team = ? AND name = ?", team, name).Order("created_at DESC, id DESC").Find(&ks).Error; err != nil {
		return nil, fmt.Errorf("list keys of endpoint %s/%s: %w", team, name, err)
	}
	return ks, nil
}

// RevokeEndpointKey revokes key id of the endpoint and returns it; it
// returns ErrNotFound when the endpoint has no such unrevoked key.
func (s *Store) RevokeEndpointKey(ctx context.Context, team, name string, id int64, by string, at time.Time) (EndpointKey, error) {
	var k EndpointKey
	res := s.db.WithContext(ctx).Model(&k).Clauses(clause.Returning{}).
		Where("id = ? AND team = ? AND name = ? AND revoked_at IS NULL", id, team, name).
		Updates(map[string]any{"revoked_at": at, "revoked_by": by})
	if res.Error != nil {
		return EndpointKey{}, fmt.Errorf("revoke key %d of endpoint %s/%s: %w", id, team, name, res.Error)
	}
	if res.RowsAffected == 0 {
		return EndpointKey{}, fmt.Errorf("revoke key %d of endpoint %s/%s: %w", id, team, name, ErrNotFound)
	}
	return k, nil
}

// EndpointUsageHour is what one inference endpoint served in one hour
// through the portal's proxy: requests, those that failed (5xx or no
// answer), and tokens from the answers' OpenAI-style usage when present.
type EndpointUsageHour struct {
	Team             string
	Name             string
	Hour             time.Time
	Requests         int64
	Errors           int64
	PromptTokens     int64
	CompletionTokens int64
}

// TableName is the hourly usage table.
func (EndpointUsageHour) TableName() string { return "endpoint_usage_hourly" }

// AddEndpointUsage adds counts to their endpoint's hour (truncated to the
// hour, UTC), creating the row on first use.
func (s *Store) AddEndpointUsage(ctx context.Context, rows []EndpointUsageHour) error {
	if len(rows) == 0 {
		return nil
	}
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		for _, u := range rows {
			u.Hour = u.Hour.UTC().Truncate(time.Hour)
			err := tx.Clauses(clause.OnConflict{
				Columns: []clause.Column{{Name: "team"}, {Name: "name"}, {Name: "hour"}},
				DoUpdates: clause.Assignments(map[string]any{
					"requests":          gorm.Expr("endpoint_usage_hourly.requests + EXCLUDED.requests"),
					"errors":            gorm.Expr("endpoint_usage_hourly.errors + EXCLUDED.errors"),
					"prompt_tokens":     gorm.Expr("endpoint_usage_hourly.prompt_tokens + EXCLUDED.prompt_tokens"),
					"completion_tokens": gorm.Expr("endpoint_usage_hourly.completion_tokens + EXCLUDED.completion_tokens"),
				}),
			}).Create(&u).Error
			if err != nil {
				return fmt.Errorf("add usage of endpoint %s/%s at %s: %w", u.Team, u.Name, u.Hour.Format(time.RFC3339), err)
			}
		}
		return nil
	})
}

// EndpointHourlyUsage returns the endpoint's hourly request and token
// counts for the hours starting in [from, to), oldest first. It is the
// figure "served requests or tokens" of cost per accepted unit reads.
func (s *Store) EndpointHourlyUsage(ctx context.Context, team, name string, from, to time.Time) ([]EndpointUsageHour, error) {
	var out []EndpointUsageHour
	err := s.db.WithContext(ctx).Where("team = ? AND name = ? AND hour >= ? AND hour < ?", team, name, from, to).
		Order("hour").Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("hourly usage of endpoint %s/%s: %w", team, name, err)
	}
	return out, nil
}

// EndpointHourlyUsageOfTeam returns the hourly request and token counts of
// every inference endpoint of the team for the hours starting in
// [from, to), by endpoint name, then hour.
func (s *Store) EndpointHourlyUsageOfTeam(ctx context.Context, team string, from, to time.Time) ([]EndpointUsageHour, error) {
	var out []EndpointUsageHour
	err := s.db.WithContext(ctx).Where("team = ? AND hour >= ? AND hour < ?", team, from, to).
		Order("name, hour").Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("hourly usage of the endpoints of team %s: %w", team, err)
	}
	return out, nil
}
