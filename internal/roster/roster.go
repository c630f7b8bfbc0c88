// Package roster is Gantry's one record of a team, from Postgres to
// Kubernetes: its name, display name, cost center and the IdP groups of its
// members and leads, and the one reader of the teams file people write
// (deploy/local/teams.yaml). The store keeps the record in Postgres,
// internal/teams projects it onto the team's cluster objects, and the local
// stack reads its teams through ReadFile.
package roster

import (
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// Team is a group of people sharing a namespace, queue and quota; its
// members and leads are named by IdP groups.
type Team struct {
	Name         string   `json:"name"`
	DisplayName  string   `json:"displayName,omitempty"`
	CostCenter   string   `json:"costCenter,omitempty"`
	MemberGroups []string `json:"memberGroups,omitempty"`
	LeadGroups   []string `json:"leadGroups,omitempty"`
	// RetiredAt is when an admin retired the team; nil while it is active.
	// A file cannot retire a team.
	RetiredAt *time.Time `json:"-"`
}

// File is the teams file: the teams and, for the local stack, the cohort
// their ClusterQueues join and their nominal quotas.
type File struct {
	// Cohort is the Kueue cohort every team's ClusterQueue joins.
	Cohort string  `json:"cohort,omitempty"`
	Teams  []Entry `json:"teams"`
}

// Entry is one team of the file.
type Entry struct {
	Team
	// Quotas is the nominal quota per ResourceFlavor (= pool name). The
	// cluster keeps quotas (the team's ClusterQueue), Postgres does not.
	Quotas map[string]corev1.ResourceList `json:"quotas,omitempty"`
}

// Records are the file's teams as records.
func (f File) Records() []Team {
	out := make([]Team, 0, len(f.Teams))
	for _, e := range f.Teams {
		out = append(out, e.Team)
	}
	return out
}

// Parse reads the teams file format strictly: a field the format does not
// have (a misspelt key) is an error, not a silent default. Every team needs
// a name, once; a team without a display name is shown by its name.
func Parse(data []byte) (File, error) {
	var f File
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		return File{}, fmt.Errorf("parse teams: %w", err)
	}
	seen := map[string]bool{}
	for i := range f.Teams {
		t := &f.Teams[i]
		if t.Name == "" {
			return File{}, fmt.Errorf("parse teams: team %d has no name", i+1)
		}
		if seen[t.Name] {
			return File{}, fmt.Errorf("parse teams: team %s listed twice", t.Name)
		}
		seen[t.Name] = true
		if t.DisplayName == "" {
			t.DisplayName = t.Name
		}
	}
	return f, nil
}

// ReadFile reads and parses the teams file at path.
func ReadFile(path string) (File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return File{}, fmt.Errorf("read teams: %w", err)
	}
	f, err := Parse(b)
	if err != nil {
		return File{}, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}
