package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"gorm.io/gorm"
)

// TemplateVersion is one immutable version of a launch template. Spec is
// the template's JSON form (internal/catalog decodes it).
type TemplateVersion struct {
	ID        int64
	Name      string
	Version   int
	Kind      string
	Title     string
	Spec      json.RawMessage `gorm:"type:jsonb"`
	Digest    string
	CreatedBy string
	CreatedAt time.Time
	RetiredAt *time.Time
	// Draft versions are not offered to researchers until published.
	Draft       bool
	PublishedBy string
	PublishedAt *time.Time
}

// TableName maps TemplateVersion to the templates table.
func (TemplateVersion) TableName() string { return "templates" }

// SaveTemplateVersion stores t as the next version of its template unless
// the latest version has the same digest, in which case it returns that
// version unchanged; created reports which happened. Concurrent callers
// (several replicas seeding at start) are serialised per template name.
func (s *Store) SaveTemplateVersion(ctx context.Context, t TemplateVersion) (saved TemplateVersion, created bool, err error) {
	err = s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Exec("SELECT pg_advisory_xact_lock(hashtext('gantry.templates'), hashtext(?))", t.Name).Error; err != nil {
			return err
		}
		var latest TemplateVersion
		err := tx.Where("name = ?", t.Name).Order("version DESC").Take(&latest).Error
		switch {
		case errors.Is(err, gorm.ErrRecordNotFound):
			t.Version = 1
		case err != nil:
			return err
		case latest.Digest == t.Digest:
			saved = latest
			return nil
		default:
			t.Version = latest.Version + 1
		}
		if !t.Draft && t.PublishedAt == nil {
			now := time.Now().UTC()
			t.PublishedAt, t.PublishedBy = &now, t.CreatedBy
		}
		if err := tx.Omit("id", "created_at", "retired_at").Create(&t).Error; err != nil {
			return err
		}
		saved, created = t, true
		return nil
	})
	s.told(TopicTemplates)
	if err != nil {
		return TemplateVersion{}, false, fmt.Errorf("save template %s: %w", t.Name, err)
	}
	return saved, created, nil
}

// LatestTemplates returns the newest published version of every template
// that is not retired, ordered by name.
func (s *Store) LatestTemplates(ctx context.Context) ([]TemplateVersion, error) {
	var ts []TemplateVersion
	err := s.db.WithContext(ctx).Raw(`SELECT DISTINCT ON (name) * FROM templates WHERE NOT draft ORDER BY name, version DESC`).Scan(&ts).Error
	if err != nil {
		return nil, fmt.Errorf("list latest templates: %w", err)
	}
	out := ts[:0]
	for _, t := range ts {
		if t.RetiredAt == nil {
			out = append(out, t)
		}
	}
	return out, nil
}

// TemplateVersionOf returns the given version of a template; version 0
// means the latest published one. It returns ErrNotFound when there is none.
// It is kept (KeepReads) until a template changes; its Spec is shared and
// must not be modified.
func (s *Store) TemplateVersionOf(ctx context.Context, name string, version int) (TemplateVersion, error) {
	return s.kept.templates.Get(ctx, name+"/"+strconv.Itoa(version), func(ctx context.Context) (TemplateVersion, error) {
		q := s.db.WithContext(ctx).Where("name = ?", name)
		if version > 0 {
			q = q.Where("version = ?", version)
		} else {
			q = q.Where("NOT draft")
		}
		var t TemplateVersion
		if err := q.Order("version DESC").Take(&t).Error; err != nil {
			return TemplateVersion{}, fmt.Errorf("get template %s version %d: %w", name, version, notFound(err))
		}
		return t, nil
	})
}
