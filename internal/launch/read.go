package launch

import (
	"context"
	"slices"

	"github.com/gantry-dev/gantry/internal/catalog"
	"github.com/gantry-dev/gantry/internal/kube"
	"github.com/gantry-dev/gantry/internal/naming"
	"github.com/gantry-dev/gantry/internal/store"
)

// TeamJobLister lists the teams' launched workloads from the cache's job
// index, a page at a time.
type TeamJobLister interface {
	JobReader
	JobRefs(q kube.JobQuery) ([]kube.JobRef, int, error)
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
		LaunchManifest(ctx context.Context, namespace, name string) (string, error)
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
	return r.Records.LaunchByName(ctx, naming.Namespace(team), name)
}

// Manifest returns the manifest a job's launch applied (Record may leave
// it out: see KeptRecords).
func (r Reader) Manifest(ctx context.Context, team, name string) (string, error) {
	return r.Records.LaunchManifest(ctx, naming.Namespace(team), name)
}

// Status returns a job's status from the cache.
func (r Reader) Status(team, name string, kind catalog.Kind) (Status, error) {
	return StatusOf(r.Jobs, naming.Namespace(team), name, kind)
}

// JobFilter narrows the job list; zero fields match everything.
type JobFilter struct {
	// Teams are the teams whose jobs are listed (the user's teams).
	Teams []string
	// Owner keeps only jobs launched by this user.
	Owner string
	// Kind keeps only jobs of this kind.
	Kind catalog.Kind
}

// JobPage is one page of the job list, newest first.
type JobPage struct {
	Statuses []Status
	// Total counts the jobs matching the filter on every page.
	Total int
	// Page is the 1-based page shown; Pages the number of pages (at least 1).
	Page, Pages int
}

// JobList returns page (1-based; out of range pages are clamped) of the jobs
// matching f, newest first, perPage to a page. It reads the page from the
// cache's job index (kept in the list's order, by namespace, owner and
// kind), so a page costs its own rows whatever the number of jobs, and
// computes the status of the jobs on the page only.
func (r Reader) JobList(f JobFilter, page, perPage int) (JobPage, error) {
	perPage = max(perPage, 1)
	q := kube.JobQuery{Owner: f.Owner, Kind: objectKind(f.Kind), Limit: perPage}
	teamOf := make(map[string]string, len(f.Teams))
	for _, t := range f.Teams {
		ns := naming.Namespace(t)
		q.Namespaces = append(q.Namespaces, ns)
		teamOf[ns] = t
	}
	if f.Kind != "" && q.Kind == "" {
		return JobPage{Page: 1, Pages: 1}, nil
	}
	p := JobPage{Page: max(page, 1)}
	q.Offset = (p.Page - 1) * perPage
	refs, total, err := r.Jobs.JobRefs(q)
	if err != nil {
		return JobPage{}, err
	}
	p.Total, p.Pages = total, max(1, (total+perPage-1)/perPage)
	if p.Page > p.Pages {
		p.Page = p.Pages
		q.Offset = (p.Page - 1) * perPage
		if refs, p.Total, err = r.Jobs.JobRefs(q); err != nil {
			return JobPage{}, err
		}
	}
	p.Statuses = make([]Status, 0, len(refs))
	for _, ref := range refs {
		if ref.Outside {
			if st, ok := outsideStatusOf(r.Jobs, teamOf[ref.Namespace], ref); ok {
				p.Statuses = append(p.Statuses, st)
			}
			continue
		}
		kind := catalogKind(ref.Kind)
		st, err := StatusOf(r.Jobs, ref.Namespace, ref.Name, kind)
		if err != nil {
			continue // deleted between list and get
		}
		st.Team = teamOf[ref.Namespace] // the namespace's team, whatever the labels say
		p.Statuses = append(p.Statuses, st)
	}
	return p, nil
}

// objectKind is the kind of object a job of kind k is; "" for none.
func objectKind(k catalog.Kind) string {
	switch k {
	case catalog.KindTraining:
		return kube.KindJob
	case catalog.KindNotebook:
		return kube.KindStatefulSet
	case catalog.KindInference:
		return kube.KindDeployment
	}
	return ""
}

// catalogKind is the job kind of an object kind.
func catalogKind(objectKind string) catalog.Kind {
	switch objectKind {
	case kube.KindStatefulSet:
		return catalog.KindNotebook
	case kube.KindDeployment:
		return catalog.KindInference
	}
	return catalog.KindTraining
}
