package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// CatalogTemplates returns the newest version of every template, drafts and
// retired ones included, ordered by name: the admin's view of the catalog.
func (s *Store) CatalogTemplates(ctx context.Context) ([]TemplateVersion, error) {
	var ts []TemplateVersion
	err := s.db.WithContext(ctx).Raw(`SELECT DISTINCT ON (name) * FROM templates ORDER BY name, version DESC`).Scan(&ts).Error
	if err != nil {
		return nil, fmt.Errorf("list catalog templates: %w", err)
	}
	return ts, nil
}

// TemplateHistory returns every version of a template, newest first, or
// ErrNotFound when the template does not exist.
func (s *Store) TemplateHistory(ctx context.Context, name string) ([]TemplateVersion, error) {
	var ts []TemplateVersion
	if err := s.db.WithContext(ctx).Where("name = ?", name).Order("version DESC").Find(&ts).Error; err != nil {
		return nil, fmt.Errorf("list versions of template %s: %w", name, err)
	}
	if len(ts) == 0 {
		return nil, fmt.Errorf("list versions of template %s: %w", name, ErrNotFound)
	}
	return ts, nil
}

// PublishTemplateVersion makes a draft version launchable. Publishing a
// published version changes nothing.
func (s *Store) PublishTemplateVersion(ctx context.Context, name string, version int, by string, at time.Time) (TemplateVersion, error) {
	res := s.db.WithContext(ctx).Model(&TemplateVersion{}).Where("name = ? AND version = ? AND draft", name, version).
		Updates(map[string]any{"draft": false, "published_by": by, "published_at": at})
	s.told(TopicTemplates)
	if res.Error != nil {
		return TemplateVersion{}, fmt.Errorf("publish template %s version %d: %w", name, version, res.Error)
	}
	return s.TemplateVersionOf(ctx, name, version)
}

// RetireTemplate retires every version of a template: it is no longer
// offered or launchable, while its launched jobs keep their records.
func (s *Store) RetireTemplate(ctx context.Context, name string, at time.Time) error {
	res := s.db.WithContext(ctx).Model(&TemplateVersion{}).Where("name = ? AND retired_at IS NULL", name).Update("retired_at", at)
	s.told(TopicTemplates)
	if res.Error != nil {
		return fmt.Errorf("retire template %s: %w", name, res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("retire template %s: %w", name, ErrNotFound)
	}
	return nil
}

// NewestTemplateVersion returns the newest version of a template, draft or
// published, retired or not; ErrNotFound when there is none.
func (s *Store) NewestTemplateVersion(ctx context.Context, name string) (TemplateVersion, error) {
	var t TemplateVersion
	if err := s.db.WithContext(ctx).Where("name = ?", name).Order("version DESC").Take(&t).Error; err != nil {
		return TemplateVersion{}, fmt.Errorf("get newest version of template %s: %w", name, notFound(err))
	}
	return t, nil
}

// SeedTemplateVersion stores a template read from a seed file as the next
// version only when the file changed since it was last seeded by the same
// seeder (CreatedBy): versions admins saved since stay the newest, so a
// restart does not undo their work, while a changed file still arrives.
func (s *Store) SeedTemplateVersion(ctx context.Context, t TemplateVersion) (TemplateVersion, bool, error) {
	var seeded TemplateVersion
	err := s.db.WithContext(ctx).Where("name = ? AND created_by = ?", t.Name, t.CreatedBy).Order("version DESC").Take(&seeded).Error
	switch {
	case err == nil && seeded.Digest == t.Digest:
		return seeded, false, nil
	case err != nil && !errors.Is(err, gorm.ErrRecordNotFound):
		return TemplateVersion{}, false, fmt.Errorf("seed template %s: %w", t.Name, err)
	}
	return s.SaveTemplateVersion(ctx, t)
}

// PublishedVersions returns the newest published version of every
// template that has one, by name.
func (s *Store) PublishedVersions(ctx context.Context) (map[string]int, error) {
	var rows []struct {
		Name    string
		Version int
	}
	if err := s.db.WithContext(ctx).Raw(`SELECT name, max(version) AS version FROM templates WHERE NOT draft GROUP BY name`).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("list published template versions: %w", err)
	}
	out := make(map[string]int, len(rows))
	for _, r := range rows {
		out[r.Name] = r.Version
	}
	return out, nil
}
