package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"gorm.io/gorm"
)

// imageAllowlist is the single row of the image_allowlist table.
type imageAllowlist struct {
	ID         int
	Registries StringList `gorm:"type:jsonb"`
	UpdatedBy  string
	UpdatedAt  time.Time
}

func (imageAllowlist) TableName() string { return "image_allowlist" }

// SeedImageAllowlist stores registries as the allowlist unless one is
// stored already, so configuration only counts on the first start; created
// reports whether it was stored.
func (s *Store) SeedImageAllowlist(ctx context.Context, registries []string, by string) (created bool, err error) {
	res := s.db.WithContext(ctx).Exec(`INSERT INTO image_allowlist (id, registries, updated_by) VALUES (1, ?, ?) ON CONFLICT (id) DO NOTHING`,
		StringList(nonNil(registries)), by)
	s.told(TopicImageAllowlist)
	if res.Error != nil {
		return false, fmt.Errorf("seed image allowlist: %w", res.Error)
	}
	return res.RowsAffected == 1, nil
}

// ImageRegistries returns the image allowlist; before it is seeded or set
// it is empty, which allows no image.
// It is kept (KeepReads) until the allowlist changes.
func (s *Store) ImageRegistries(ctx context.Context) ([]string, error) {
	regs, err := s.kept.allowlist.Get(ctx, "", func(ctx context.Context) ([]string, error) {
		var row imageAllowlist
		err := s.db.WithContext(ctx).Take(&row).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return []string{}, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read image allowlist: %w", err)
		}
		return nonNil(row.Registries), nil
	})
	return slices.Clone(regs), err
}

// SetImageAllowlist replaces the allowlist and returns the one it replaced.
func (s *Store) SetImageAllowlist(ctx context.Context, registries []string, by string, at time.Time) (before []string, err error) {
	err = s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var row imageAllowlist
		err := tx.Raw(`SELECT * FROM image_allowlist WHERE id = 1 FOR UPDATE`).Scan(&row).Error
		if err != nil {
			return err
		}
		before = nonNil(row.Registries)
		return tx.Exec(`INSERT INTO image_allowlist (id, registries, updated_by, updated_at) VALUES (1, ?, ?, ?)
ON CONFLICT (id) DO UPDATE SET registries = EXCLUDED.registries, updated_by = EXCLUDED.updated_by, updated_at = EXCLUDED.updated_at`,
			StringList(nonNil(registries)), by, at).Error
	})
	s.told(TopicImageAllowlist)
	if err != nil {
		return nil, fmt.Errorf("set image allowlist: %w", err)
	}
	return before, nil
}
