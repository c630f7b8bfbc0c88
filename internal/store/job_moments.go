package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// JobMoment is one recorded moment of a job's attempts: a pod started
// running, or an attempt ended (a pod failed, Kueue evicted or preempted
// the workload, the workload finished). Moments outlive the pods and
// events they were read from.
type JobMoment struct {
	ID        int64
	Team      string
	Namespace string
	Job       string
	// MomentKey names what was seen (pod or workload UID, and for an
	// eviction when it happened); unique per job, so a moment is written once.
	MomentKey string
	// Kind is "started" or "ended".
	Kind string
	At   time.Time
	// Ending, Cause and Words say how an ended attempt ended: the ending
	// (failed, succeeded, preempted, evicted, pod-failed), the cause kind
	// and its sentence.
	Ending, Cause, Words string
	Pod, Node            string
	// PodIndex is an Indexed Job pod's completion index; nil otherwise.
	PodIndex   *int
	RecordedAt time.Time
}

// The kinds of job moment.
const (
	MomentStarted = "started"
	MomentEnded   = "ended"
)

// MomentNotice is what an ending tells the job's owner and the team's
// webhook, written in the moment's transaction so it is sent once.
type MomentNotice struct {
	// Text is the notification's sentence; Link the job page's address
	// (path for the portal, full URL for the webhook).
	Text, Link, URL string
	// Payload is the webhook's JSON body.
	Payload json.RawMessage
}

// RecordJobMoment inserts m unless a moment with its key was recorded for
// the job; it reports whether it inserted. When it inserts and notice is
// not nil, the job's owner (from its launch record) gets a notification
// and the team's webhook, if one is set, a queued delivery, in the same
// transaction: replicas racing on one moment write, notify and deliver once.
func (s *Store) RecordJobMoment(ctx context.Context, m JobMoment, notice *MomentNotice) (bool, error) {
	defer s.jobs.forget(m.Namespace, m.Job)
	if m.RecordedAt.IsZero() {
		m.RecordedAt = time.Now().UTC()
	}
	inserted := false
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		res := tx.Omit("id").Clauses(clause.OnConflict{DoNothing: true}).Create(&m)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return nil
		}
		inserted = true
		if notice == nil {
			return nil
		}
		// The owner is the launch's: objects made outside the portal have no
		// owner to notify, only the team's webhook.
		if err := tx.Exec(`INSERT INTO notifications (username, text, link, moment_id)
			SELECT owner, ?, ?, ? FROM launches WHERE namespace = ? AND name = ? ORDER BY created_at DESC LIMIT 1`,
			notice.Text, notice.Link, m.ID, m.Namespace, m.Job).Error; err != nil {
			return fmt.Errorf("notify owner: %w", err)
		}
		if err := tx.Exec(`INSERT INTO webhook_deliveries (team, url, moment_id, payload)
			SELECT team, url, ?, ? FROM team_webhooks WHERE team = ?`, m.ID, string(notice.Payload), m.Team).Error; err != nil {
			return fmt.Errorf("queue webhook delivery: %w", err)
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("record moment %s of %s/%s: %w", m.MomentKey, m.Namespace, m.Job, err)
	}
	return inserted, nil
}

// JobMoments returns the recorded moments of one job, oldest first.
func (s *Store) JobMoments(ctx context.Context, namespace, job string) ([]JobMoment, error) {
	if r, ok := s.together(ctx, namespace, job); ok {
		return r.moments, r.err
	}
	var out []JobMoment
	if err := jobMomentsQuery(s.db.WithContext(ctx), namespace, job).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list moments of %s/%s: %w", namespace, job, err)
	}
	return out, nil
}

func jobMomentsQuery(tx *gorm.DB, namespace, job string) *gorm.DB {
	return tx.Where("namespace = ? AND job = ?", namespace, job).Order("at, id")
}

// TeamMoments returns the moments of the team's jobs that had a moment
// since from, each job's moments whole and oldest first, so attempts that
// began before from are read as they were.
func (s *Store) TeamMoments(ctx context.Context, team string, from time.Time) ([]JobMoment, error) {
	var out []JobMoment
	err := s.db.WithContext(ctx).Where("team = ? AND (namespace, job) IN (SELECT namespace, job FROM job_moments WHERE team = ? AND at >= ?)", team, team, from).
		Order("namespace, job, at, id").Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("list moments of team %s: %w", team, err)
	}
	return out, nil
}

// ErrNoWebhook is returned when a team has no webhook.
var ErrNoWebhook = errors.New("team has no webhook")
