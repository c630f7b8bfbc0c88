package acceptance

import (
	"context"
	"fmt"
	"os"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/gantry-dev/gantry/internal/audit"
	"github.com/gantry-dev/gantry/internal/store"
)

// Seeder stores a definition unless the pool has one.
type Seeder interface {
	SeedAcceptanceDefinition(ctx context.Context, d store.AcceptanceDefinition) (bool, error)
}

// seedFile is the format of deploy/local/acceptance.yaml.
type seedFile struct {
	Definitions []Definition `json:"definitions"`
}

// SeedDefinitions stores the file's definitions for pools that have none
// (an admin's edits are kept) and returns how many it stored.
func SeedDefinitions(ctx context.Context, s Seeder, path string) (int, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("seed acceptance definitions: %w", err)
	}
	var f seedFile
	if err := yaml.UnmarshalStrict(raw, &f); err != nil {
		return 0, fmt.Errorf("seed acceptance definitions from %s: %w", path, err)
	}
	n := 0
	for _, d := range f.Definitions {
		if errs := d.Validate(); errs != nil {
			return n, fmt.Errorf("seed acceptance definition of %s from %s: %w", d.Pool, path, errs)
		}
		d.UpdatedBy, d.UpdatedAt = audit.SystemActor, time.Now().UTC()
		stored, err := s.SeedAcceptanceDefinition(ctx, d.toStore())
		if err != nil {
			return n, err
		}
		if stored {
			n++
		}
	}
	return n, nil
}
