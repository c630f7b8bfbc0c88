package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Verdicts on a job's result.
const (
	VerdictAccepted = "accepted"
	VerdictRejected = "rejected"
)

// RunVerdict is a person's verdict on a job's result: accepted results are
// the units cost per accepted unit divides by.
type RunVerdict struct {
	Namespace string    `gorm:"primaryKey" json:"-"`
	JobName   string    `gorm:"primaryKey" json:"job"`
	Team      string    `json:"team"`
	Verdict   string    `json:"verdict"`
	Note      string    `json:"note"`
	DecidedBy string    `json:"decidedBy"`
	DecidedAt time.Time `json:"decidedAt"`
}

// TableName is run_verdicts.
func (RunVerdict) TableName() string { return "run_verdicts" }

// SetVerdict records a verdict, replacing an earlier one on the same job,
// and returns the one it replaced (zero when there was none).
func (s *Store) SetVerdict(ctx context.Context, v RunVerdict) (RunVerdict, error) {
	defer s.jobs.forget(v.Namespace, v.JobName)
	before, err := replaceRow(ctx, s.db, &v, clause.OnConflict{
		Columns:   []clause.Column{{Name: "namespace"}, {Name: "job_name"}},
		DoUpdates: clause.AssignmentColumns([]string{"verdict", "note", "decided_by", "decided_at"}),
	}, "namespace = ? AND job_name = ?", v.Namespace, v.JobName)
	if err != nil {
		return RunVerdict{}, fmt.Errorf("set verdict on %s/%s: %w", v.Namespace, v.JobName, err)
	}
	return before, nil
}

// Verdict returns the verdict on a job; ErrNotFound when there is none.
func (s *Store) Verdict(ctx context.Context, namespace, job string) (RunVerdict, error) {
	if r, ok := s.together(ctx, namespace, job); ok {
		return first(r, r.verdicts, ErrNotFound)
	}
	var v RunVerdict
	err := verdictQuery(s.db.WithContext(ctx), namespace, job).Take(&v).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return RunVerdict{}, ErrNotFound
	}
	if err != nil {
		return RunVerdict{}, fmt.Errorf("verdict on %s/%s: %w", namespace, job, err)
	}
	return v, nil
}

func verdictQuery(tx *gorm.DB, namespace, job string) *gorm.DB {
	return tx.Where("namespace = ? AND job_name = ?", namespace, job)
}

// DatedVerdict is a verdict with the time its result counts at: when the
// job's last run ended, or when it was decided if no run has ended.
type DatedVerdict struct {
	RunVerdict
	At time.Time
}

// TeamVerdicts returns every verdict of the team's jobs, dated.
func (s *Store) TeamVerdicts(ctx context.Context, team string) ([]DatedVerdict, error) {
	var out []DatedVerdict
	err := s.db.WithContext(ctx).Raw(`SELECT v.*, COALESCE(
			(SELECT max(l.ended_at) FROM cost_ledger l WHERE l.namespace = v.namespace AND l.job_name = v.job_name),
			v.decided_at) AS at
		FROM run_verdicts v WHERE v.team = ? ORDER BY v.namespace, v.job_name`, team).Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("verdicts of team %s: %w", team, err)
	}
	return out, nil
}

// AcceptanceRule is a team's rule that accepts succeeded runs without a
// person's verdict: runs that ended in [AcceptFrom, AcceptUntil), the
// rule being on while AcceptUntil is nil.
type AcceptanceRule struct {
	Team        string `gorm:"primaryKey"`
	AcceptFrom  time.Time
	AcceptUntil *time.Time
	SetBy       string
	SetAt       time.Time
}

// TableName is team_acceptance_rules.
func (AcceptanceRule) TableName() string { return "team_acceptance_rules" }

// On reports whether the rule accepts runs now.
func (r AcceptanceRule) On() bool { return !r.AcceptFrom.IsZero() && r.AcceptUntil == nil }

// Covers reports whether a run that ended at t is accepted by the rule.
func (r AcceptanceRule) Covers(t time.Time) bool {
	return !r.AcceptFrom.IsZero() && !t.Before(r.AcceptFrom) && (r.AcceptUntil == nil || t.Before(*r.AcceptUntil))
}

// TeamAcceptanceRule returns the team's rule; the zero rule (off) when it
// never had one.
func (s *Store) TeamAcceptanceRule(ctx context.Context, team string) (AcceptanceRule, error) {
	var r AcceptanceRule
	err := s.db.WithContext(ctx).Where("team = ?", team).Take(&r).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return AcceptanceRule{Team: team}, nil
	}
	if err != nil {
		return AcceptanceRule{}, fmt.Errorf("acceptance rule of %s: %w", team, err)
	}
	return r, nil
}

// SetAcceptanceRule turns the team's rule on or off at at. Turning on a
// rule that is on, or off one that is off, changes nothing; it returns the
// rule as it is afterwards and whether it changed.
func (s *Store) SetAcceptanceRule(ctx context.Context, team string, on bool, by string, at time.Time) (AcceptanceRule, bool, error) {
	var out AcceptanceRule
	changed := false
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Where("team = ?", team).Take(&out).Error
		if err != nil && !errors.Is(err, gorm.ErrRecordNotFound) {
			return err
		}
		out.Team = team
		switch {
		case on == out.On():
			return nil
		case on:
			out.AcceptFrom, out.AcceptUntil = at, nil
		default:
			out.AcceptUntil = &at
		}
		out.SetBy, out.SetAt, changed = by, at, true
		return tx.Save(&out).Error
	})
	if err != nil {
		return AcceptanceRule{}, false, fmt.Errorf("set acceptance rule of %s: %w", team, err)
	}
	return out, changed, nil
}
