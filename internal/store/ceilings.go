package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// TeamCeiling caps the nominal quota a team lead may approve for their team
// in one flavor and resource; above it only an admin may approve.
type TeamCeiling struct {
	Team      string `gorm:"primaryKey"`
	Flavor    string `gorm:"primaryKey"`
	Resource  string `gorm:"primaryKey"`
	Ceiling   int64
	UpdatedBy string
	UpdatedAt time.Time
}

// Ceiling returns the ceiling for the team, flavor and resource, or
// ErrNotFound when an admin set none.
func (s *Store) Ceiling(ctx context.Context, team, flavor, resource string) (TeamCeiling, error) {
	var c TeamCeiling
	err := s.db.WithContext(ctx).Where("team = ? AND flavor = ? AND resource = ?", team, flavor, resource).Take(&c).Error
	if err != nil {
		return TeamCeiling{}, fmt.Errorf("get ceiling of %s %s %s: %w", team, flavor, resource, notFound(err))
	}
	return c, nil
}

// Ceilings lists the team's ceilings by flavor and resource.
func (s *Store) Ceilings(ctx context.Context, team string) ([]TeamCeiling, error) {
	var out []TeamCeiling
	if err := s.db.WithContext(ctx).Where("team = ?", team).Order("flavor, resource").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list ceilings of %s: %w", team, err)
	}
	return out, nil
}

// ReplaceCeilings sets the team's ceilings to exactly cs.
func (s *Store) ReplaceCeilings(ctx context.Context, team string, cs []TeamCeiling) error {
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Where("team = ?", team).Delete(&TeamCeiling{}).Error; err != nil {
			return err
		}
		if len(cs) == 0 {
			return nil
		}
		for i := range cs {
			cs[i].Team = team
		}
		return tx.Clauses(clause.OnConflict{UpdateAll: true}).Create(&cs).Error
	})
	if err != nil {
		return fmt.Errorf("replace ceilings of %s: %w", team, err)
	}
	return nil
}
