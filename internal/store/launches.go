package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// ErrDuplicateLaunch is returned when a launch with the same launch id exists.
var ErrDuplicateLaunch = errors.New("launch already recorded")

// Launch records who launched which template version with which parameters
// and which objects it made. Status is not here: it is read from the cluster.
type Launch struct {
	ID              int64
	LaunchID        string
	Team            string
	Namespace       string
	Name            string
	Kind            string
	Template        string
	TemplateVersion int
	Owner           string
	Parameters      json.RawMessage `gorm:"type:jsonb"`
	Objects         StringList
	Manifest        string
	CreatedAt       time.Time
	DeletedAt       *time.Time
	// DeletedBy is who deleted the job through the portal; nil if unknown.
	DeletedBy *string
}

// RecordLaunch stores a launch. A second record with the same launch id
// returns the first one and ErrDuplicateLaunch.
func (s *Store) RecordLaunch(ctx context.Context, l Launch) (Launch, error) {
	return s.RecordLaunchAudited(ctx, l, nil)
}

// RecordLaunchAudited stores a launch and, in the same transaction, its
// audit entry (if any): both or neither. A second record with the same
// launch id appends nothing and returns the first one and ErrDuplicateLaunch.
//
// It is one statement, so one round trip: a launch waited for BEGIN, two
// INSERTs and COMMIT in turn, each a chance to queue for a core behind the
// API server at 50 launches a second. A statement is atomic on its own:
// the audit entry is written from the launch's inserted row, and a
// duplicate launch id fails the whole statement.
func (s *Store) RecordLaunchAudited(ctx context.Context, l Launch, e *AuditEntry) (Launch, error) {
	if l.Parameters == nil {
		l.Parameters = json.RawMessage("{}")
	}
	if l.CreatedAt.IsZero() {
		l.CreatedAt = s.db.NowFunc()
	}
	args := []any{l.LaunchID, l.Team, l.Namespace, l.Name, l.Kind, l.Template, l.TemplateVersion, l.Owner, l.Parameters, l.Objects, l.Manifest, l.CreatedAt}
	q := `INSERT INTO launches (launch_id, team, namespace, name, kind, template, template_version, owner, parameters, objects, manifest, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?::jsonb, ?::jsonb, ?, ?) RETURNING id`
	if e != nil {
		q = `WITH l AS (` + q + `), a AS (INSERT INTO audit_log (at, actor, action, target, detail, ip, via) SELECT ?::timestamptz, ?, ?, ?, ?::jsonb, ?, ? FROM l)
		SELECT id FROM l`
		args = append(args, e.At, e.Actor, e.Action, e.Target, e.detailOrEmpty(), e.IP, e.Via)
	}
	// A raw statement's error is not translated by gorm: a duplicate launch
	// id is PostgreSQL's unique violation.
	err := s.db.WithContext(ctx).Raw(q, args...).Scan(&l.ID).Error
	if err != nil {
		err = s.db.Dialector.(gorm.ErrorTranslator).Translate(err)
	}
	if errors.Is(err, gorm.ErrDuplicatedKey) {
		existing, getErr := s.LaunchByID(ctx, l.LaunchID)
		if getErr != nil {
			return Launch{}, fmt.Errorf("record launch %s: %w", l.LaunchID, getErr)
		}
		return existing, ErrDuplicateLaunch
	}
	if err != nil {
		return Launch{}, fmt.Errorf("record launch %s: %w", l.LaunchID, err)
	}
	return l, nil
}

// LaunchByID returns the launch with this launch id, or ErrNotFound.
func (s *Store) LaunchByID(ctx context.Context, launchID string) (Launch, error) {
	var l Launch
	if err := s.db.WithContext(ctx).Where("launch_id = ?", launchID).Take(&l).Error; err != nil {
		return Launch{}, fmt.Errorf("get launch %s: %w", launchID, notFound(err))
	}
	return l, nil
}

// LaunchByName returns the launch that made the named workload, or ErrNotFound.
func (s *Store) LaunchByName(ctx context.Context, namespace, name string) (Launch, error) {
	var l Launch
	if err := s.db.WithContext(ctx).Where("namespace = ? AND name = ?", namespace, name).Take(&l).Error; err != nil {
		return Launch{}, fmt.Errorf("get launch %s/%s: %w", namespace, name, notFound(err))
	}
	return l, nil
}

// WorkloadName is a workload's namespace and name.
type WorkloadName struct{ Namespace, Name string }

// Launched returns which of the named workloads have a launch record, in
// one query whatever the namespaces (a job list page spans every team of
// its user).
func (s *Store) Launched(ctx context.Context, names []WorkloadName) (map[WorkloadName]bool, error) {
	out := make(map[WorkloadName]bool, len(names))
	if len(names) == 0 {
		return out, nil
	}
	pairs := make([][]any, len(names))
	for i, n := range names {
		pairs[i] = []any{n.Namespace, n.Name}
	}
	var found []WorkloadName
	if err := s.db.WithContext(ctx).Model(&Launch{}).Select("namespace", "name").Where("(namespace, name) IN ?", pairs).Find(&found).Error; err != nil {
		return nil, fmt.Errorf("look up the launches of %d workloads: %w", len(names), err)
	}
	for _, n := range found {
		out[n] = true
	}
	return out, nil
}

// MarkLaunchDeleted notes that by deleted the launch's objects at at.
func (s *Store) MarkLaunchDeleted(ctx context.Context, namespace, name, by string, at time.Time) error {
	err := s.db.WithContext(ctx).Model(&Launch{}).Where("namespace = ? AND name = ? AND deleted_at IS NULL", namespace, name).
		Updates(map[string]any{"deleted_at": at, "deleted_by": by}).Error
	if err != nil {
		return fmt.Errorf("mark launch %s/%s deleted: %w", namespace, name, err)
	}
	return nil
}

// RecentLaunches returns the newest limit launch records, newest first,
// without their manifests (LaunchManifest reads one): what a replica keeps
// of every job.
func (s *Store) RecentLaunches(ctx context.Context, limit int) ([]Launch, error) {
	var out []Launch
	if err := s.db.WithContext(ctx).Omit("manifest").Order("id DESC").Limit(limit).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list the newest %d launches: %w", limit, err)
	}
	return out, nil
}

func manifestQuery(tx *gorm.DB, namespace, name string) *gorm.DB {
	return tx.Model(&Launch{}).Where("namespace = ? AND name = ?", namespace, name).Limit(1)
}

// LaunchManifest returns the manifest the named launch applied, or
// ErrNotFound.
func (s *Store) LaunchManifest(ctx context.Context, namespace, name string) (string, error) {
	var manifests []string
	if err := manifestQuery(s.db.WithContext(ctx), namespace, name).Pluck("manifest", &manifests).Error; err != nil {
		return "", fmt.Errorf("get the manifest of launch %s/%s: %w", namespace, name, err)
	}
	if len(manifests) == 0 {
		return "", fmt.Errorf("get the manifest of launch %s/%s: %w", namespace, name, ErrNotFound)
	}
	return manifests[0], nil
}
