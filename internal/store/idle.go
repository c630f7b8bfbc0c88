package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/gantry-dev/gantry/internal/money"
)

// IdlePolicy is the admins' idle-reclaim rule for one template kind, for
// one team or (Team "") every team without its own.
type IdlePolicy struct {
	Team             string `gorm:"primaryKey"`
	Kind             string `gorm:"primaryKey"`
	ThresholdPercent float64
	WindowSeconds    int
	GraceSeconds     int
	ExtensionSeconds int
	UpdatedBy        string
	UpdatedAt        time.Time
}

// IdleHold keeps one job from being reclaimed: an exemption (Until nil)
// or a bounded extension.
type IdleHold struct {
	LaunchID  string `gorm:"primaryKey"`
	Namespace string
	Name      string
	Exempt    bool
	Reason    string
	HeldBy    string
	HeldAt    time.Time
	Until     *time.Time
}

// IdleEpisode is one stretch of a job's GPUs idle under its policy, and
// what the reclaim did about it.
type IdleEpisode struct {
	ID               int64
	LaunchID         string
	Namespace        string
	Name             string
	Team             string
	Kind             string
	Owner            string
	ThresholdPercent float64
	WindowSeconds    int
	IdleSince        time.Time
	WarnedAt         *time.Time
	ActAfter         *time.Time
	Action           string
	ActedAt          *time.Time
	ClosedAt         *time.Time
	CloseReason      string
	Flavor           string
	Resource         string
	GPUsFreed        int64     `gorm:"column:gpus_freed"`
	IdleGPUHours     float64   `gorm:"column:idle_gpu_hours"`
	IdleCostUSD      money.USD `gorm:"column:idle_cost_usd"`
	USDPerHour       money.USD `gorm:"column:usd_per_hour"`
}

// ErrEpisodeOpen is returned when a job already has an open idle episode
// (another leader opened it first).
var ErrEpisodeOpen = errors.New("idle episode already open")

// IdlePolicies lists every stored policy, defaults (team "") first.
func (s *Store) IdlePolicies(ctx context.Context) ([]IdlePolicy, error) {
	var out []IdlePolicy
	if err := s.db.WithContext(ctx).Order("team, kind").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list idle policies: %w", err)
	}
	return out, nil
}

// SetIdlePolicy stores a policy and returns the one it replaced, if any.
func (s *Store) SetIdlePolicy(ctx context.Context, p IdlePolicy) (*IdlePolicy, error) {
	var before *IdlePolicy
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var old IdlePolicy
		err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Where("team = ? AND kind = ?", p.Team, p.Kind).Take(&old).Error
		switch {
		case err == nil:
			before = &old
		case !errors.Is(err, gorm.ErrRecordNotFound):
			return err
		}
		return tx.Clauses(clause.OnConflict{UpdateAll: true}).Create(&p).Error
	})
	if err != nil {
		return nil, fmt.Errorf("set idle policy %s/%s: %w", p.Team, p.Kind, err)
	}
	return before, nil
}

// DeleteIdlePolicy removes a team's own policy, so the default applies again.
func (s *Store) DeleteIdlePolicy(ctx context.Context, team, kind string) error {
	if err := s.db.WithContext(ctx).Where("team = ? AND kind = ?", team, kind).Delete(&IdlePolicy{}).Error; err != nil {
		return fmt.Errorf("delete idle policy %s/%s: %w", team, kind, err)
	}
	return nil
}

// IdleHolds returns the holds of the given launches, by launch id.
func (s *Store) IdleHolds(ctx context.Context) (map[string]IdleHold, error) {
	var rows []IdleHold
	if err := s.db.WithContext(ctx).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list idle holds: %w", err)
	}
	out := make(map[string]IdleHold, len(rows))
	for _, h := range rows {
		out[h.LaunchID] = h
	}
	return out, nil
}

// IdleHold returns the hold on one launch, or ErrNotFound.
func (s *Store) IdleHold(ctx context.Context, launchID string) (IdleHold, error) {
	var h IdleHold
	if err := s.db.WithContext(ctx).Where("launch_id = ?", launchID).Take(&h).Error; err != nil {
		return IdleHold{}, fmt.Errorf("get idle hold of %s: %w", launchID, notFound(err))
	}
	return h, nil
}

// HoldIdle stores a hold on a launch and closes its open episode with
// closeReason, in one transaction; an exemption is never replaced by an
// extension.
func (s *Store) HoldIdle(ctx context.Context, h IdleHold, closeReason string, entry AuditEntry) error {
	defer s.jobs.forget(h.Namespace, h.Name)
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var old IdleHold
		err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Where("launch_id = ?", h.LaunchID).Take(&old).Error
		if err == nil && old.Exempt && !h.Exempt {
			return nil
		}
		if err != nil && !errors.Is(err, gorm.ErrRecordNotFound) {
			return err
		}
		if err := tx.Clauses(clause.OnConflict{UpdateAll: true}).Create(&h).Error; err != nil {
			return err
		}
		if err := tx.Model(&IdleEpisode{}).Where("launch_id = ? AND closed_at IS NULL", h.LaunchID).
			Updates(map[string]any{"closed_at": h.HeldAt, "close_reason": closeReason}).Error; err != nil {
			return err
		}
		return appendAudit(tx, entry)
	})
	if err != nil {
		return fmt.Errorf("hold idle reclaim of %s/%s: %w", h.Namespace, h.Name, err)
	}
	return nil
}

// ReleaseIdleHold removes a launch's hold.
func (s *Store) ReleaseIdleHold(ctx context.Context, launchID string, entry AuditEntry) error {
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		res := tx.Where("launch_id = ?", launchID).Delete(&IdleHold{})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return nil
		}
		return appendAudit(tx, entry)
	})
	if err != nil {
		return fmt.Errorf("release idle hold of %s: %w", launchID, err)
	}
	return nil
}

// OpenIdleEpisodes returns every open episode by launch id.
func (s *Store) OpenIdleEpisodes(ctx context.Context) (map[string]IdleEpisode, error) {
	var rows []IdleEpisode
	if err := s.db.WithContext(ctx).Where("closed_at IS NULL").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list open idle episodes: %w", err)
	}
	out := make(map[string]IdleEpisode, len(rows))
	for _, e := range rows {
		out[e.LaunchID] = e
	}
	return out, nil
}

// LatestIdleEpisode returns a job's newest episode, or ErrNotFound.
func (s *Store) LatestIdleEpisode(ctx context.Context, namespace, name string) (IdleEpisode, error) {
	if r, ok := s.together(ctx, namespace, name); ok {
		return first(r, r.episodes, fmt.Errorf("latest idle episode of %s/%s: %w", namespace, name, ErrNotFound))
	}
	var e IdleEpisode
	if err := latestIdleEpisodeQuery(s.db.WithContext(ctx), namespace, name).Take(&e).Error; err != nil {
		return IdleEpisode{}, fmt.Errorf("latest idle episode of %s/%s: %w", namespace, name, notFound(err))
	}
	return e, nil
}

func latestIdleEpisodeQuery(tx *gorm.DB, namespace, name string) *gorm.DB {
	return tx.Where("namespace = ? AND name = ?", namespace, name).Order("id DESC")
}

// OpenIdleEpisode inserts an episode together with its notification and
// audit entry; ErrEpisodeOpen when the launch already has an open one, and
// then nothing is written.
func (s *Store) OpenIdleEpisode(ctx context.Context, e IdleEpisode, n *Notification, entry *AuditEntry) (IdleEpisode, error) {
	defer s.jobs.forget(e.Namespace, e.Name)
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		res := tx.Omit("id").Clauses(clause.OnConflict{DoNothing: true}).Create(&e)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return ErrEpisodeOpen
		}
		return sideEffects(tx, n, entry)
	})
	if errors.Is(err, ErrEpisodeOpen) {
		return IdleEpisode{}, err
	}
	if err != nil {
		return IdleEpisode{}, fmt.Errorf("open idle episode of %s/%s: %w", e.Namespace, e.Name, err)
	}
	return e, nil
}

// ActOnIdleEpisode records what the reclaim did to an open episode (and,
// when close, ends it), with its notification and audit entry, only if no
// one recorded an action first: it reports whether this call did.
func (s *Store) ActOnIdleEpisode(ctx context.Context, e IdleEpisode, close bool, n *Notification, entry *AuditEntry) (bool, error) {
	defer s.jobs.forget(e.Namespace, e.Name)
	done := false
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		set := map[string]any{"action": e.Action, "acted_at": e.ActedAt, "flavor": e.Flavor, "resource": e.Resource,
			"gpus_freed": e.GPUsFreed, "idle_gpu_hours": e.IdleGPUHours, "idle_cost_usd": e.IdleCostUSD, "usd_per_hour": e.USDPerHour}
		if close {
			set["closed_at"] = e.ActedAt
			set["close_reason"] = e.Action
		}
		res := tx.Model(&IdleEpisode{}).Where("id = ? AND closed_at IS NULL AND acted_at IS NULL", e.ID).Updates(set)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return nil
		}
		done = true
		return sideEffects(tx, n, entry)
	})
	if err != nil {
		return false, fmt.Errorf("record idle reclaim of %s/%s: %w", e.Namespace, e.Name, err)
	}
	return done, nil
}

// CloseIdleEpisode ends an open episode (the GPUs are busy again, or the
// job is gone).
func (s *Store) CloseIdleEpisode(ctx context.Context, id int64, at time.Time, reason string) error {
	var closed []WorkloadName
	err := s.db.WithContext(ctx).Raw(`UPDATE idle_episodes SET closed_at = ?, close_reason = ? WHERE id = ? AND closed_at IS NULL
		RETURNING namespace, name`, at, reason, id).Scan(&closed).Error
	for _, n := range closed {
		s.jobs.forget(n.Namespace, n.Name)
	}
	if err != nil {
		return fmt.Errorf("close idle episode %d: %w", id, err)
	}
	return nil
}

// ReclaimedSince lists the reclaims (stops and scale-downs) since from.
func (s *Store) ReclaimedSince(ctx context.Context, from time.Time) ([]IdleEpisode, error) {
	var rows []IdleEpisode
	err := s.db.WithContext(ctx).Where("acted_at >= ? AND action IN ('stopped', 'scaled')", from).Order("acted_at").Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("list idle reclaims since %s: %w", from.Format(time.RFC3339), err)
	}
	return rows, nil
}

func sideEffects(tx *gorm.DB, n *Notification, entry *AuditEntry) error {
	if n != nil {
		if err := tx.Omit("id").Create(n).Error; err != nil {
			return err
		}
	}
	if entry != nil {
		return appendAudit(tx, *entry)
	}
	return nil
}

func appendAudit(tx *gorm.DB, e AuditEntry) error {
	e.Detail = e.detailOrEmpty()
	return tx.Omit("id").Create(&e).Error
}

// LiveLaunches lists the launches whose objects the portal has not deleted,
// without their parameters, objects and manifest: the idle loop reads every
// live launch each pass, and a manifest is kilobytes where the rest of the
// row is a few dozen bytes.
func (s *Store) LiveLaunches(ctx context.Context) ([]Launch, error) {
	var out []Launch
	if err := s.db.WithContext(ctx).Omit("parameters", "objects", "manifest").Where("deleted_at IS NULL").Order("id").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list live launches: %w", err)
	}
	return out, nil
}
