package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/gantry-dev/gantry/internal/money"
)

// ErrStale is a compare-and-set that lost: the row changed since it was read.
var ErrStale = errors.New("changed since it was read")

// AcceptanceDefinition is a pool's acceptance run as an admin defines it.
type AcceptanceDefinition struct {
	Pool                         string `gorm:"primaryKey"`
	Team                         string
	Template                     string
	Image                        string
	GPUs                         int `gorm:"column:gpus"`
	Nodes                        int
	Dataset                      string
	Weights                      string
	TrainingWindowSeconds        int
	Benchmark                    bool
	MaxQueueWaitSeconds          float64
	MaxDataPullSeconds           float64
	MinBusBandwidthGbps          float64 `gorm:"column:min_bus_bandwidth_gbps"`
	MaxCheckpointWriteSeconds    float64
	MaxRecoverySeconds           float64
	MinSamplesPerSecond          float64
	BaselineLabel                string
	BaselineUSDPerMillionSamples money.USD `gorm:"column:baseline_usd_per_million_samples"`
	MinBaselineRatio             float64
	UpdatedBy                    string
	UpdatedAt                    time.Time
}

// TableName is acceptance_definitions.
func (AcceptanceDefinition) TableName() string { return "acceptance_definitions" }

// SaveAcceptanceDefinition inserts or replaces the pool's definition and
// returns the one it replaced (Pool empty when there was none).
func (s *Store) SaveAcceptanceDefinition(ctx context.Context, d AcceptanceDefinition) (AcceptanceDefinition, error) {
	before, err := replaceRow(ctx, s.db, &d, clause.OnConflict{UpdateAll: true}, "pool = ?", d.Pool)
	if err != nil {
		return AcceptanceDefinition{}, fmt.Errorf("save acceptance definition of %s: %w", d.Pool, err)
	}
	return before, nil
}

// SeedAcceptanceDefinition stores d unless the pool has a definition, and
// reports whether it did: seeds never overwrite an admin's edits.
func (s *Store) SeedAcceptanceDefinition(ctx context.Context, d AcceptanceDefinition) (bool, error) {
	res := s.db.WithContext(ctx).Clauses(clause.OnConflict{DoNothing: true}).Create(&d)
	if res.Error != nil {
		return false, fmt.Errorf("seed acceptance definition of %s: %w", d.Pool, res.Error)
	}
	return res.RowsAffected == 1, nil
}

// AcceptanceDefinition returns the pool's definition, or ErrNotFound.
func (s *Store) AcceptanceDefinition(ctx context.Context, pool string) (AcceptanceDefinition, error) {
	var d AcceptanceDefinition
	if err := s.db.WithContext(ctx).Where("pool = ?", pool).Take(&d).Error; err != nil {
		return AcceptanceDefinition{}, fmt.Errorf("acceptance definition of %s: %w", pool, notFound(err))
	}
	return d, nil
}

// AcceptanceDefinitions returns every pool's definition by pool.
func (s *Store) AcceptanceDefinitions(ctx context.Context) ([]AcceptanceDefinition, error) {
	var out []AcceptanceDefinition
	if err := s.db.WithContext(ctx).Order("pool").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list acceptance definitions: %w", err)
	}
	return out, nil
}

// AcceptanceRun is one run of a pool's acceptance test. Definition, State
// and Steps are the acceptance package's JSON; Version counts changes.
type AcceptanceRun struct {
	ID            int64 `gorm:"primaryKey"`
	Pool          string
	Team          string
	Definition    json.RawMessage `gorm:"type:jsonb"`
	StartedBy     string
	StarterGroups StringList `gorm:"type:jsonb"`
	LaunchID      string
	Status        string
	Step          int
	Version       int64
	Namespace     string
	JobName       string
	State         json.RawMessage `gorm:"type:jsonb"`
	Steps         json.RawMessage `gorm:"type:jsonb"`
	CostUSD       *money.USD      `gorm:"column:cost_usd"`
	CreatedAt     time.Time
	FinishedAt    *time.Time
}

// TableName is acceptance_runs.
func (AcceptanceRun) TableName() string { return "acceptance_runs" }

// CreateAcceptanceRun stores a new run and returns it with its id.
func (s *Store) CreateAcceptanceRun(ctx context.Context, r AcceptanceRun) (AcceptanceRun, error) {
	if r.State == nil {
		r.State = json.RawMessage("{}")
	}
	if r.StarterGroups == nil {
		r.StarterGroups = StringList{}
	}
	if err := s.db.WithContext(ctx).Create(&r).Error; err != nil {
		return AcceptanceRun{}, fmt.Errorf("create acceptance run of %s: %w", r.Pool, err)
	}
	return r, nil
}

// AcceptanceRun returns the run with id, or ErrNotFound.
func (s *Store) AcceptanceRun(ctx context.Context, id int64) (AcceptanceRun, error) {
	var r AcceptanceRun
	if err := s.db.WithContext(ctx).Where("id = ?", id).Take(&r).Error; err != nil {
		return AcceptanceRun{}, fmt.Errorf("acceptance run %d: %w", id, notFound(err))
	}
	return r, nil
}

// AcceptanceRuns returns a pool's runs, newest first, at most limit.
func (s *Store) AcceptanceRuns(ctx context.Context, pool string, limit int) ([]AcceptanceRun, error) {
	var out []AcceptanceRun
	q := s.db.WithContext(ctx).Order("created_at DESC, id DESC").Limit(limit)
	if pool != "" {
		q = q.Where("pool = ?", pool)
	}
	if err := q.Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list acceptance runs of %q: %w", pool, err)
	}
	return out, nil
}

// RunningAcceptanceRuns returns the runs still in progress, oldest first.
func (s *Store) RunningAcceptanceRuns(ctx context.Context) ([]AcceptanceRun, error) {
	var out []AcceptanceRun
	if err := s.db.WithContext(ctx).Where("status = ?", "running").Order("id").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list running acceptance runs: %w", err)
	}
	return out, nil
}

// UpdateAcceptanceRun writes r's progress if the stored row still has
// r.Version, and bumps the version; ErrStale when another writer got there
// first. The row lock of the UPDATE makes concurrent writers take turns.
func (s *Store) UpdateAcceptanceRun(ctx context.Context, r AcceptanceRun) (AcceptanceRun, error) {
	return s.UpdateAcceptanceRunAudited(ctx, r, nil)
}

// UpdateAcceptanceRunAudited is UpdateAcceptanceRun that appends e (if any)
// in the same transaction: the entry is written exactly when the progress
// it records is, so a runner that takes over a run never records it again.
func (s *Store) UpdateAcceptanceRunAudited(ctx context.Context, r AcceptanceRun, e *AuditEntry) (AcceptanceRun, error) {
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		res := tx.Model(&AcceptanceRun{}).Where("id = ? AND version = ?", r.ID, r.Version).Updates(map[string]any{
			"status": r.Status, "step": r.Step, "version": r.Version + 1,
			"namespace": r.Namespace, "job_name": r.JobName,
			"state": r.State, "steps": r.Steps, "cost_usd": r.CostUSD, "finished_at": r.FinishedAt,
		})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected != 1 {
			return fmt.Errorf("at version %d: %w", r.Version, ErrStale)
		}
		if e == nil {
			return nil
		}
		return appendAudit(tx, *e)
	})
	if err != nil {
		return AcceptanceRun{}, fmt.Errorf("update acceptance run %d: %w", r.ID, err)
	}
	r.Version++
	return r, nil
}
