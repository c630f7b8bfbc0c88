package store

import (
	"context"
	"fmt"
	"time"

	"github.com/gantry-dev/gantry/internal/roster"
)

// AllTeams returns every team, retired ones too, ordered by name.
func (s *Store) AllTeams(ctx context.Context) ([]roster.Team, error) {
	var rows []teamRow
	if err := s.db.WithContext(ctx).Order("name").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list teams: %w", err)
	}
	return teamsOfRows(rows), nil
}

// SaveTeam creates the team or updates its display name, cost center and
// groups by name; it does not change retired_at.
func (s *Store) SaveTeam(ctx context.Context, t roster.Team) (roster.Team, error) {
	now := time.Now().UTC()
	err := s.db.WithContext(ctx).Exec(`
INSERT INTO teams (name, display_name, cost_center, member_groups, lead_groups, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (name) DO UPDATE SET display_name = EXCLUDED.display_name, cost_center = EXCLUDED.cost_center,
    member_groups = EXCLUDED.member_groups, lead_groups = EXCLUDED.lead_groups, updated_at = EXCLUDED.updated_at`,
		t.Name, t.DisplayName, t.CostCenter, StringList(nonNil(t.MemberGroups)), StringList(nonNil(t.LeadGroups)), now, now).Error
	s.told(TopicTeams)
	if err != nil {
		return roster.Team{}, fmt.Errorf("save team %s: %w", t.Name, err)
	}
	return s.TeamByName(ctx, t.Name)
}

// RetireTeam marks the team retired at the given time.
func (s *Store) RetireTeam(ctx context.Context, name string, at time.Time) error {
	res := s.db.WithContext(ctx).Model(&teamRow{}).Where("name = ? AND retired_at IS NULL", name).
		Updates(map[string]any{"retired_at": at, "updated_at": at})
	s.told(TopicTeams)
	if res.Error != nil {
		return fmt.Errorf("retire team %s: %w", name, res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("retire team %s: %w", name, ErrNotFound)
	}
	return nil
}
