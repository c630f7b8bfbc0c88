package store

import (
	"context"
	"fmt"
	"os"

	"github.com/goccy/go-yaml"
)

// teamsFile is the part of deploy/local/teams.yaml the portal reads.
type teamsFile struct {
	Teams []struct {
		Name         string   `yaml:"name"`
		DisplayName  string   `yaml:"displayName"`
		CostCenter   string   `yaml:"costCenter"`
		MemberGroups []string `yaml:"memberGroups"`
		LeadGroups   []string `yaml:"leadGroups"`
	} `yaml:"teams"`
}

// ParseTeams reads teams from the teams.yaml format.
func ParseTeams(data []byte) ([]Team, error) {
	var f teamsFile
	if err := yaml.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("parse teams: %w", err)
	}
	teams := make([]Team, 0, len(f.Teams))
	seen := map[string]bool{}
	for i, t := range f.Teams {
		if t.Name == "" {
			return nil, fmt.Errorf("parse teams: team %d has no name", i+1)
		}
		if seen[t.Name] {
			return nil, fmt.Errorf("parse teams: team %s listed twice", t.Name)
		}
		seen[t.Name] = true
		display := t.DisplayName
		if display == "" {
			display = t.Name
		}
		teams = append(teams, Team{
			Name:         t.Name,
			DisplayName:  display,
			CostCenter:   t.CostCenter,
			MemberGroups: StringList(nonNil(t.MemberGroups)),
			LeadGroups:   StringList(nonNil(t.LeadGroups)),
		})
	}
	return teams, nil
}

// SeedTeamsFile upserts the teams listed in the teams.yaml at path.
func (s *Store) SeedTeamsFile(ctx context.Context, path string) (int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("seed teams: %w", err)
	}
	teams, err := ParseTeams(data)
	if err != nil {
		return 0, fmt.Errorf("seed teams from %s: %w", path, err)
	}
	if err := s.UpsertTeams(ctx, teams); err != nil {
		return 0, fmt.Errorf("seed teams from %s: %w", path, err)
	}
	return len(teams), nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
