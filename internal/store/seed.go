package store

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"sigs.k8s.io/yaml"
)

// teamsFile is the teams.yaml format (deploy/local/teams.yaml); the portal
// reads its teams, the local stack also the cohort and the quotas.
type teamsFile struct {
	Cohort string `json:"cohort"`
	Teams  []struct {
		Name         string   `json:"name"`
		DisplayName  string   `json:"displayName"`
		CostCenter   string   `json:"costCenter"`
		MemberGroups []string `json:"memberGroups"`
		LeadGroups   []string `json:"leadGroups"`
		// Quotas are the local stack's (internal/devcluster checks them).
		Quotas map[string]json.RawMessage `json:"quotas"`
	} `json:"teams"`
}

// ParseTeams reads teams from the teams.yaml format, refusing fields the
// format does not have (a misspelt key is an error, not a silent default).
func ParseTeams(data []byte) ([]Team, error) {
	var f teamsFile
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
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
