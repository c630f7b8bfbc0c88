package launch

import (
	"cmp"
	"context"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"

	"github.com/gantry-dev/gantry/internal/catalog"
	"github.com/gantry-dev/gantry/internal/store"
)

// TeamJobLister lists a team's launched workloads from the cache.
type TeamJobLister interface {
	JobReader
	TeamJobs(team string) ([]*batchv1.Job, []*appsv1.StatefulSet, []*appsv1.Deployment, error)
}

// TemplateLister lists the latest template versions.
type TemplateLister interface {
	LatestTemplates(ctx context.Context) ([]store.TemplateVersion, error)
}

// Reader answers the portal's questions about templates and jobs.
type Reader struct {
	Templates TemplateLister
	Records   interface {
		LaunchByName(ctx context.Context, namespace, name string) (store.Launch, error)
	}
	Jobs TeamJobLister
}

// TemplatesFor returns the latest templates usable by any of the teams, by name.
func (r Reader) TemplatesFor(ctx context.Context, teams []string) ([]catalog.Template, error) {
	tvs, err := r.Templates.LatestTemplates(ctx)
	if err != nil {
		return nil, err
	}
	var out []catalog.Template
	for _, tv := range tvs {
		t, err := Decode(tv)
		if err != nil {
			return nil, err
		}
		if slices.ContainsFunc(teams, t.AllowedFor) {
			out = append(out, t)
		}
	}
	return out, nil
}

// Record returns the launch record of a job.
func (r Reader) Record(ctx context.Context, team, name string) (store.Launch, error) {
	return r.Records.LaunchByName(ctx, Namespace(team), name)
}

// Status returns a job's status from the cache.
func (r Reader) Status(team, name string, kind catalog.Kind) (Status, error) {
	return StatusOf(r.Jobs, Namespace(team), name, kind)
}

// TeamStatuses returns the status of every job of the team, newest first.
func (r Reader) TeamStatuses(team string) ([]Status, error) {
	jobs, sts, deps, err := r.Jobs.TeamJobs(team)
	if err != nil {
		return nil, err
	}
	ns := Namespace(team)
	type ref struct {
		name    string
		kind    catalog.Kind
		created int64
	}
	var refs []ref
	for _, j := range jobs {
		refs = append(refs, ref{j.Name, catalog.KindTraining, j.CreationTimestamp.UnixNano()})
	}
	for _, s := range sts {
		refs = append(refs, ref{s.Name, catalog.KindNotebook, s.CreationTimestamp.UnixNano()})
	}
	for _, d := range deps {
		refs = append(refs, ref{d.Name, catalog.KindInference, d.CreationTimestamp.UnixNano()})
	}
	slices.SortFunc(refs, func(a, b ref) int {
		if c := cmp.Compare(b.created, a.created); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	out := make([]Status, 0, len(refs))
	for _, rf := range refs {
		st, err := StatusOf(r.Jobs, ns, rf.name, rf.kind)
		if err != nil {
			continue // deleted between list and get
		}
		out = append(out, st)
	}
	return out, nil
}
