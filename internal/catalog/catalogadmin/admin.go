// Package catalogadmin is what admins do to the catalog: save template
// versions as drafts, preview them with policy, publish, retire, duplicate,
// diff, import and export; edit the image allowlist and GPU prices. Every
// change is audited.
package catalogadmin

import (
	"context"
	"errors"
	"fmt"
	"github.com/gantry-dev/gantry/internal/problem"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/gantry-dev/gantry/internal/audit"
	"github.com/gantry-dev/gantry/internal/catalog"
	"github.com/gantry-dev/gantry/internal/launch"
	"github.com/gantry-dev/gantry/internal/policy"
	"github.com/gantry-dev/gantry/internal/store"
)

// Audit actions.
const (
	ActionTemplateSave      = "template.save"
	ActionTemplatePublish   = "template.publish"
	ActionTemplateRetire    = "template.retire"
	ActionTemplateDuplicate = "template.duplicate"
	ActionTemplateImport    = "template.import"
	ActionAllowlistUpdate   = "allowlist.update"
	ActionPriceSet          = "price.set"
)

// Store is what catalog administration needs from the database.
type Store interface {
	SaveTemplateVersion(ctx context.Context, t store.TemplateVersion) (store.TemplateVersion, bool, error)
	TemplateVersionOf(ctx context.Context, name string, version int) (store.TemplateVersion, error)
	NewestTemplateVersion(ctx context.Context, name string) (store.TemplateVersion, error)
	TemplateHistory(ctx context.Context, name string) ([]store.TemplateVersion, error)
	CatalogTemplates(ctx context.Context) ([]store.TemplateVersion, error)
	PublishedVersions(ctx context.Context) (map[string]int, error)
	PublishTemplateVersion(ctx context.Context, name string, version int, by string, at time.Time) (store.TemplateVersion, error)
	RetireTemplate(ctx context.Context, name string, at time.Time) error
	ImageRegistries(ctx context.Context) ([]string, error)
	SetImageAllowlist(ctx context.Context, registries []string, by string, at time.Time) ([]string, error)
	AllPrices(ctx context.Context) ([]store.GPUPrice, error)
	SetPrice(ctx context.Context, p store.GPUPrice) error
}

// Actor is the admin acting, for the audit log.
type Actor struct {
	Username, IP, Via string
}

// ValidationError is input an admin must correct, one sentence each.
type ValidationError struct {
	Problems []string
}

// Error joins the sentences.
func (e *ValidationError) Error() string { return strings.Join(e.Problems, " ") }

// Problem is Invalid with the sentences.
func (e *ValidationError) Problem() problem.Problem {
	return problem.Problem{Kind: problem.Invalid, Title: "Check your input", Detail: e.Error()}
}

// InvalidItems lists the sentences.
func (e *ValidationError) InvalidItems() []string { return e.Problems }

// Problem is Invalid: the version stays a draft.
func (e *PolicyError) Problem() problem.Problem {
	return problem.Problem{Kind: problem.Invalid, Title: "Not published", Detail: e.Error()}
}

// InvalidItems lists the violations.
func (e *PolicyError) InvalidItems() []string { return e.Violations }

// PolicyError lists why a template version cannot be published.
type PolicyError struct {
	Name       string
	Version    int
	Violations []string
}

// Error joins the violations.
func (e *PolicyError) Error() string {
	return fmt.Sprintf("Version %d of %s cannot be published: %s", e.Version, e.Name, strings.Join(e.Violations, " "))
}

// Admin administers the catalog.
type Admin struct {
	Store Store
	Audit *audit.Log
	Now   func() time.Time
	// Cluster receives every saved image allowlist; nil keeps it in the
	// portal only.
	Cluster ClusterAllowlist
}

func (a *Admin) now() time.Time {
	if a.Now != nil {
		return a.Now().UTC()
	}
	return time.Now().UTC()
}

// Parse reads a template from the editor's YAML, with problems in words.
func Parse(yamlText string) (catalog.Template, error) {
	ts, err := ParseAll(yamlText)
	if err != nil {
		return catalog.Template{}, err
	}
	if len(ts) != 1 {
		return catalog.Template{}, &ValidationError{Problems: []string{fmt.Sprintf("The editor holds one template; this text has %d. Use import for several.", len(ts))}}
	}
	return ts[0], nil
}

// ParseAll reads one or more templates from YAML, with problems in words.
func ParseAll(yamlText string) ([]catalog.Template, error) {
	ts, err := catalog.ParseAll([]byte(yamlText))
	if err != nil {
		return nil, &ValidationError{Problems: sentences(err)}
	}
	if len(ts) == 0 {
		return nil, &ValidationError{Problems: []string{"The text holds no template."}}
	}
	return ts, nil
}

// sentences turns the catalog's validation errors into sentences: each
// joined error becomes one, capitalised and ending with a full stop.
func sentences(err error) []string {
	var leaves []error
	var walk func(error)
	walk = func(e error) {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, c := range j.Unwrap() {
				walk(c)
			}
			return
		}
		if u := errors.Unwrap(e); u != nil && !strings.HasPrefix(e.Error(), "parse template") {
			walk(u)
			return
		}
		leaves = append(leaves, e)
	}
	walk(err)
	out := make([]string, 0, len(leaves))
	for _, l := range leaves {
		msg := l.Error()
		if rest, ok := strings.CutPrefix(msg, "parse template: "); ok {
			for _, noise := range []string{"error converting YAML to JSON: ", "error unmarshaling JSON: ", "while decoding JSON: ", "json: "} {
				rest = strings.ReplaceAll(rest, noise, "")
			}
			msg = "the YAML is not a template file: " + rest
		}
		r := []rune(msg)
		r[0] = unicode.ToUpper(r[0])
		msg = string(r)
		if !strings.HasSuffix(msg, ".") {
			msg += "."
		}
		out = append(out, msg)
	}
	return out
}

// Preview renders the template for sample parameters and lists every
// policy violation in words; a template with violations cannot be published.
func (a *Admin) Preview(ctx context.Context, t *catalog.Template) (catalog.Sample, []string, error) {
	regs, err := a.Store.ImageRegistries(ctx)
	if err != nil {
		return catalog.Sample{}, nil, err
	}
	sample, err := catalog.RenderSample(t, "")
	var ferrs problem.Fields
	if errors.As(err, &ferrs) {
		return catalog.Sample{}, sortedMessages(ferrs), nil
	}
	if err != nil {
		return catalog.Sample{}, []string{"The template cannot be rendered with its default parameters: " + err.Error()}, nil
	}
	errs := policy.Rules{Registries: regs}.Check(launch.PolicyLaunch(t, sample.Values, sample.Rendered), nil)
	return sample, sortedMessages(errs), nil
}

func sortedMessages(errs problem.Fields) []string {
	msgs := slices.Collect(maps.Values(errs))
	slices.Sort(msgs)
	return slices.Compact(msgs)
}

// Save stores the template as a draft version: the next version of its
// name, or the latest one unchanged when nothing changed.
func (a *Admin) Save(ctx context.Context, actor Actor, t catalog.Template) (store.TemplateVersion, bool, error) {
	if latest, err := a.Store.NewestTemplateVersion(ctx, t.Name); err == nil && latest.RetiredAt != nil {
		return store.TemplateVersion{}, false, &ValidationError{Problems: []string{fmt.Sprintf("The template %s is retired; duplicate it under a new name to change it.", t.Name)}}
	} else if err != nil && !errors.Is(err, store.ErrNotFound) {
		return store.TemplateVersion{}, false, err
	}
	return a.save(ctx, actor, t, ActionTemplateSave, nil)
}

func (a *Admin) save(ctx context.Context, actor Actor, t catalog.Template, action string, detail map[string]any) (store.TemplateVersion, bool, error) {
	if err := t.Validate(); err != nil {
		return store.TemplateVersion{}, false, &ValidationError{Problems: sentences(err)}
	}
	spec, digest, err := catalog.Spec(t)
	if err != nil {
		return store.TemplateVersion{}, false, err
	}
	tv, created, err := a.Store.SaveTemplateVersion(ctx, store.TemplateVersion{Name: t.Name, Kind: string(t.Kind), Title: t.Title,
		Spec: spec, Digest: digest, CreatedBy: actor.Username, Draft: true})
	if err != nil || !created {
		return tv, created, err
	}
	if detail == nil {
		detail = map[string]any{}
	}
	detail["version"] = tv.Version
	detail["digest"] = digest
	return tv, true, a.record(ctx, actor, action, t.Name, detail)
}

func (a *Admin) record(ctx context.Context, actor Actor, action, target string, detail map[string]any) error {
	return a.Audit.Record(ctx, audit.Event{Actor: actor.Username, Action: action, Target: target, Detail: detail, IP: actor.IP, Via: actor.Via})
}

// Version loads and decodes one version; version 0 is the newest, drafts included.
func (a *Admin) Version(ctx context.Context, name string, version int) (store.TemplateVersion, catalog.Template, error) {
	var tv store.TemplateVersion
	var err error
	if version == 0 {
		tv, err = a.Store.NewestTemplateVersion(ctx, name)
	} else {
		tv, err = a.Store.TemplateVersionOf(ctx, name, version)
	}
	if err != nil {
		return store.TemplateVersion{}, catalog.Template{}, err
	}
	t, err := launch.Decode(tv)
	return tv, t, err
}

// Publish makes a version launchable, unless policy finds violations.
func (a *Admin) Publish(ctx context.Context, actor Actor, name string, version int) (store.TemplateVersion, error) {
	tv, t, err := a.Version(ctx, name, version)
	if err != nil {
		return store.TemplateVersion{}, err
	}
	if tv.RetiredAt != nil {
		return store.TemplateVersion{}, &PolicyError{Name: name, Version: tv.Version, Violations: []string{"The template is retired."}}
	}
	_, violations, err := a.Preview(ctx, &t)
	if err != nil {
		return store.TemplateVersion{}, err
	}
	if len(violations) > 0 {
		return store.TemplateVersion{}, &PolicyError{Name: name, Version: tv.Version, Violations: violations}
	}
	if !tv.Draft {
		return tv, nil
	}
	published, err := a.Store.PublishTemplateVersion(ctx, name, tv.Version, actor.Username, a.now())
	if err != nil {
		return store.TemplateVersion{}, err
	}
	return published, a.record(ctx, actor, ActionTemplatePublish, name, map[string]any{"version": tv.Version})
}

// Retire stops a template from being offered or launched; its jobs stay.
func (a *Admin) Retire(ctx context.Context, actor Actor, name string) error {
	if err := a.Store.RetireTemplate(ctx, name, a.now()); err != nil {
		return err
	}
	return a.record(ctx, actor, ActionTemplateRetire, name, nil)
}

// Duplicate saves a version of a template as the first draft of a new one.
func (a *Admin) Duplicate(ctx context.Context, actor Actor, name string, version int, newName string) (store.TemplateVersion, error) {
	_, t, err := a.Version(ctx, name, version)
	if err != nil {
		return store.TemplateVersion{}, err
	}
	if _, err := a.Store.NewestTemplateVersion(ctx, newName); err == nil {
		return store.TemplateVersion{}, &ValidationError{Problems: []string{fmt.Sprintf("A template called %s exists already; choose another name.", newName)}}
	} else if !errors.Is(err, store.ErrNotFound) {
		return store.TemplateVersion{}, err
	}
	from := t.Version
	t.Name = newName
	tv, _, err := a.save(ctx, actor, t, ActionTemplateDuplicate, map[string]any{"from": fmt.Sprintf("%s v%d", name, from)})
	return tv, err
}

// Import saves every template of a YAML file as a draft; unchanged ones
// keep their version. All are checked before any is saved.
func (a *Admin) Import(ctx context.Context, actor Actor, yamlText string) ([]store.TemplateVersion, error) {
	ts, err := ParseAll(yamlText)
	if err != nil {
		return nil, err
	}
	out := make([]store.TemplateVersion, 0, len(ts))
	for _, t := range ts {
		tv, _, err := a.save(ctx, actor, t, ActionTemplateImport, nil)
		if err != nil {
			return out, err
		}
		out = append(out, tv)
	}
	return out, nil
}

// Export returns a version in the file format of deploy/templates.
func (a *Admin) Export(ctx context.Context, name string, version int) ([]byte, error) {
	_, t, err := a.Version(ctx, name, version)
	if err != nil {
		return nil, err
	}
	return catalog.FileYAML(t)
}

// Diff compares two versions of a template.
func (a *Admin) Diff(ctx context.Context, name string, from, to int) (string, error) {
	_, a1, err := a.Version(ctx, name, from)
	if err != nil {
		return "", err
	}
	_, b1, err := a.Version(ctx, name, to)
	if err != nil {
		return "", err
	}
	return catalog.Diff(a1, b1)
}

// Templates lists every template's newest version, drafts and retired
// included, and the newest published version of each by name.
func (a *Admin) Templates(ctx context.Context) ([]store.TemplateVersion, map[string]int, error) {
	tvs, err := a.Store.CatalogTemplates(ctx)
	if err != nil {
		return nil, nil, err
	}
	published, err := a.Store.PublishedVersions(ctx)
	if err != nil {
		return nil, nil, err
	}
	return tvs, published, nil
}

// History lists every version of a template, newest first.
func (a *Admin) History(ctx context.Context, name string) ([]store.TemplateVersion, error) {
	return a.Store.TemplateHistory(ctx, name)
}

// Allowlist returns the image registry allowlist.
func (a *Admin) Allowlist(ctx context.Context) ([]string, error) {
	return a.Store.ImageRegistries(ctx)
}
