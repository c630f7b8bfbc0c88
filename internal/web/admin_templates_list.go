package web

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/internal/catalog"
	"github.com/gantry-dev/gantry/internal/catalog/catalogadmin"
	"github.com/gantry-dev/gantry/internal/naming"
	"github.com/gantry-dev/gantry/internal/store"
	"github.com/gantry-dev/gantry/views"
)

// CatalogAdmin is what the admin pages for templates, prices and the image
// allowlist need (internal/catalog/catalogadmin.Admin).
type CatalogAdmin interface {
	Preview(ctx context.Context, t *catalog.Template) (catalog.Sample, []string, error)
	Save(ctx context.Context, actor catalogadmin.Actor, t catalog.Template) (store.TemplateVersion, bool, error)
	Version(ctx context.Context, name string, version int) (store.TemplateVersion, catalog.Template, error)
	Publish(ctx context.Context, actor catalogadmin.Actor, name string, version int) (store.TemplateVersion, error)
	Retire(ctx context.Context, actor catalogadmin.Actor, name string) error
	Duplicate(ctx context.Context, actor catalogadmin.Actor, name string, version int, newName string) (store.TemplateVersion, error)
	Import(ctx context.Context, actor catalogadmin.Actor, yamlText string) ([]store.TemplateVersion, error)
	Export(ctx context.Context, name string, version int) ([]byte, error)
	Diff(ctx context.Context, name string, from, to int) (string, error)
	Templates(ctx context.Context) ([]store.TemplateVersion, map[string]int, error)
	History(ctx context.Context, name string) ([]store.TemplateVersion, error)
	SetAllowlist(ctx context.Context, actor catalogadmin.Actor, text string) ([]string, error)
	Allowlist(ctx context.Context) ([]string, error)
	SetPrice(ctx context.Context, actor catalogadmin.Actor, f catalogadmin.PriceForm) (store.GPUPrice, error)
	Prices(ctx context.Context) ([]store.GPUPrice, error)
}

// adminTemplatesList shows every template's newest version, with import.
func (h *handler) adminTemplatesList(c *gin.Context) {
	h.renderAdminTemplates(c, http.StatusOK, views.AdminTemplatesProps{})
}

func (h *handler) renderAdminTemplates(c *gin.Context, status int, p views.AdminTemplatesProps) {
	ctx := c.Request.Context()
	tvs, published, err := h.Catalog.Templates(ctx)
	if err != nil {
		h.fail(c, err)
		return
	}
	for _, tv := range tvs {
		p.Templates = append(p.Templates, views.AdminTemplateRow{Name: tv.Name, Title: tv.Title, Kind: tv.Kind, Version: tv.Version,
			Status: versionStatus(tv), Published: published[tv.Name], CreatedBy: tv.CreatedBy, CreatedAt: tv.CreatedAt})
	}
	h.render(c, status, views.AdminTemplatesPage(h.nav(c, "templates"), p))
}

func versionStatus(tv store.TemplateVersion) string {
	switch {
	case tv.RetiredAt != nil:
		return "retired"
	case tv.Draft:
		return "draft"
	default:
		return "published"
	}
}

func catalogActor(c *gin.Context) catalogadmin.Actor {
	u, _ := auth.CurrentUser(c)
	return catalogadmin.Actor{Username: u.Username, IP: c.ClientIP(), Via: u.Via()}
}

// editorProps fills the editor's schema, preview and policy check for a
// template that parsed.
func (h *handler) editorProps(ctx context.Context, p *views.AdminTemplateEditProps, t *catalog.Template) error {
	sample, violations, err := h.Catalog.Preview(ctx, t)
	if err != nil {
		return err
	}
	p.Violations = violations
	p.PreviewYAML = sample.YAML
	p.Schema = templateSchema(t, sample.Rendered.Namespace)
	return nil
}

func templateSchema(t *catalog.Template, namespace string) *views.TemplateSchema {
	s := &views.TemplateSchema{Title: t.Title, Kind: string(t.Kind), Image: t.Image, Teams: t.Teams}
	s.SampleTeam, _ = naming.TeamOfNamespace(namespace)
	for _, g := range t.GPUTypes {
		s.GPUTypes = append(s.GPUTypes, views.GPUTypeRow{Name: g.Name, Label: g.Label, Pool: g.Pool, Resource: g.Resource})
	}
	p := t.Parameters
	ints := func(name string, r *catalog.IntRange) {
		if r != nil {
			s.Parameters = append(s.Parameters, views.ParameterRow{Name: name, Min: strconv.Itoa(r.Min), Default: strconv.Itoa(r.Default), Max: strconv.Itoa(r.Max)})
		}
	}
	ints("GPUs per pod", &p.GPUs)
	s.Parameters = append(s.Parameters,
		views.ParameterRow{Name: "CPU", Min: p.CPU.Min, Default: p.CPU.Default, Max: p.CPU.Max},
		views.ParameterRow{Name: "Memory", Min: p.Memory.Min, Default: p.Memory.Default, Max: p.Memory.Max})
	ints("Replicas", p.Replicas)
	ints("Nodes", p.Nodes)
	ints("Duration (minutes)", p.DurationMinutes)
	if p.Args != nil {
		s.Parameters = append(s.Parameters, views.ParameterRow{Name: "Arguments", Min: "—", Default: *p.Args, Max: "—"})
	}
	for name, choices := range map[string][]catalog.Choice{"Model": p.Models, "Dataset": p.Datasets, "Checkpoint": p.Checkpoints} {
		if len(choices) > 0 {
			names := ""
			for i, ch := range choices {
				if i > 0 {
					names += ", "
				}
				names += ch.Name
			}
			s.Parameters = append(s.Parameters, views.ParameterRow{Name: name, Min: "—", Default: choices[0].Name, Max: "one of " + names})
		}
	}
	return s
}

func versionRows(history []store.TemplateVersion) []views.TemplateVersionRow {
	rows := make([]views.TemplateVersionRow, 0, len(history))
	for _, v := range history {
		rows = append(rows, views.TemplateVersionRow{Version: v.Version, Status: versionStatus(v), CreatedBy: v.CreatedBy,
			CreatedAt: v.CreatedAt, PublishedBy: v.PublishedBy, PublishedAt: v.PublishedAt})
	}
	return rows
}

// problemsOf returns the sentences of a validation error, or false.
func problemsOf(err error) ([]string, bool) {
	var verr *catalogadmin.ValidationError
	if errors.As(err, &verr) {
		return verr.Problems, true
	}
	return nil, false
}

// todayUTC is the date input's default.
func todayUTC(now time.Time) string { return now.UTC().Format(time.DateOnly) }
