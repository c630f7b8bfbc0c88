package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm/clause"
)

// Team is a group of people sharing a namespace, queue and quota; its
// members and leads are named by IdP groups.
type Team struct {
	ID           int64
	Name         string
	DisplayName  string
	CostCenter   string
	MemberGroups StringList
	LeadGroups   StringList
	RetiredAt    *time.Time
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// UpsertTeams creates the teams or updates them by name (and un-retires them).
func (s *Store) UpsertTeams(ctx context.Context, teams []Team) error {
	if len(teams) == 0 {
		return nil
	}
	err := s.db.WithContext(ctx).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "name"}},
		DoUpdates: clause.AssignmentColumns([]string{"display_name", "cost_center", "member_groups", "lead_groups", "retired_at", "updated_at"}),
	}).Omit("id", "created_at").Create(&teams).Error
	if err != nil {
		return fmt.Errorf("upsert %d teams: %w", len(teams), err)
	}
	return nil
}

// ActiveTeams returns all teams that are not retired, ordered by name.
func (s *Store) ActiveTeams(ctx context.Context) ([]Team, error) {
	var teams []Team
	if err := s.db.WithContext(ctx).Where("retired_at IS NULL").Order("name").Find(&teams).Error; err != nil {
		return nil, fmt.Errorf("list active teams: %w", err)
	}
	return teams, nil
}

// TeamByName returns the team, or ErrNotFound.
func (s *Store) TeamByName(ctx context.Context, name string) (Team, error) {
	var t Team
	if err := s.db.WithContext(ctx).Where("name = ?", name).Take(&t).Error; err != nil {
		return Team{}, fmt.Errorf("get team %s: %w", name, notFound(err))
	}
	return t, nil
}
