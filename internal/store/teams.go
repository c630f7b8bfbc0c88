package store

import (
	"context"
	"fmt"
	"slices"
	"time"

	"gorm.io/gorm/clause"

	"github.com/gantry-dev/gantry/internal/roster"
)

// teamRow is how Postgres keeps a roster.Team.
type teamRow struct {
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

func (teamRow) TableName() string { return "teams" }

func rowOfTeam(t roster.Team) teamRow {
	return teamRow{Name: t.Name, DisplayName: t.DisplayName, CostCenter: t.CostCenter,
		MemberGroups: StringList(nonNil(t.MemberGroups)), LeadGroups: StringList(nonNil(t.LeadGroups)), RetiredAt: t.RetiredAt}
}

func (r teamRow) team() roster.Team {
	return roster.Team{Name: r.Name, DisplayName: r.DisplayName, CostCenter: r.CostCenter,
		MemberGroups: nonNil(r.MemberGroups), LeadGroups: nonNil(r.LeadGroups), RetiredAt: r.RetiredAt}
}

func teamsOfRows(rows []teamRow) []roster.Team {
	out := make([]roster.Team, 0, len(rows))
	for _, r := range rows {
		out = append(out, r.team())
	}
	return out
}

// UpsertTeams creates the teams or updates them by name (and un-retires them).
func (s *Store) UpsertTeams(ctx context.Context, teams []roster.Team) error {
	if len(teams) == 0 {
		return nil
	}
	rows := make([]teamRow, 0, len(teams))
	for _, t := range teams {
		rows = append(rows, rowOfTeam(t))
	}
	err := s.db.WithContext(ctx).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "name"}},
		DoUpdates: clause.AssignmentColumns([]string{"display_name", "cost_center", "member_groups", "lead_groups", "retired_at", "updated_at"}),
	}).Omit("id", "created_at").Create(&rows).Error
	s.told(TopicTeams)
	if err != nil {
		return fmt.Errorf("upsert %d teams: %w", len(teams), err)
	}
	return nil
}

// ActiveTeams returns all teams that are not retired, ordered by name.
// Its teams are kept (KeepReads) until one changes; they share their
// groups' slices and must not be modified.
func (s *Store) ActiveTeams(ctx context.Context) ([]roster.Team, error) {
	teams, err := s.kept.teams.Get(ctx, "", func(ctx context.Context) ([]roster.Team, error) {
		var rows []teamRow
		if err := s.db.WithContext(ctx).Where("retired_at IS NULL").Order("name").Find(&rows).Error; err != nil {
			return nil, fmt.Errorf("list active teams: %w", err)
		}
		return teamsOfRows(rows), nil
	})
	return slices.Clone(teams), err
}

// TeamByName returns the team, or ErrNotFound.
// It is kept (KeepReads) until a team changes; its groups' slices are
// shared and must not be modified.
func (s *Store) TeamByName(ctx context.Context, name string) (roster.Team, error) {
	return s.kept.team.Get(ctx, name, func(ctx context.Context) (roster.Team, error) {
		var r teamRow
		if err := s.db.WithContext(ctx).Where("name = ?", name).Take(&r).Error; err != nil {
			return roster.Team{}, fmt.Errorf("get team %s: %w", name, notFound(err))
		}
		return r.team(), nil
	})
}

// SeedTeamsFile upserts the teams listed in the teams file at path.
func (s *Store) SeedTeamsFile(ctx context.Context, path string) (int, error) {
	f, err := roster.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("seed teams: %w", err)
	}
	if err := s.UpsertTeams(ctx, f.Records()); err != nil {
		return 0, fmt.Errorf("seed teams from %s: %w", path, err)
	}
	return len(f.Teams), nil
}
