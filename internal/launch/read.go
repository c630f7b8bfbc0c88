package launch

import (
	"cmp"
	"context"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
// matching f, newest first, perPage to a page. It filters on the cached
// objects' labels, orders by creation time keeping only the jobs up to the
// page (never sorting all of them), and computes the status of the jobs on
// the page only.
func (r Reader) JobList(f JobFilter, page, perPage int) (JobPage, error) {
	type teamObjects struct {
		jobs []*batchv1.Job
		sts  []*appsv1.StatefulSet
		deps []*appsv1.Deployment
	}
	all := make([]teamObjects, len(f.Teams))
	for i, team := range f.Teams {
		jobs, sts, deps, err := r.Jobs.TeamJobs(team)
		if err != nil {
			return JobPage{}, err
		}
		all[i] = teamObjects{jobs, sts, deps}
	}
	keep := func(o metav1.Object, kind catalog.Kind) bool {
		return (f.Owner == "" || o.GetLabels()[catalog.LabelOwner] == f.Owner) && (f.Kind == "" || f.Kind == kind)
	}
	each := func(fn func(o metav1.Object, team int, kind catalog.Kind)) {
		for i, t := range all {
			for _, j := range t.jobs {
				if keep(j, catalog.KindTraining) {
					fn(j, i, catalog.KindTraining)
				}
			}
			for _, s := range t.sts {
				if keep(s, catalog.KindNotebook) {
					fn(s, i, catalog.KindNotebook)
				}
			}
			for _, d := range t.deps {
				if keep(d, catalog.KindInference) {
					fn(d, i, catalog.KindInference)
				}
			}
		}
	}

	var total int
	each(func(metav1.Object, int, catalog.Kind) { total++ })
	perPage = max(perPage, 1)
	p := JobPage{Total: total, Pages: max(1, (total+perPage-1)/perPage)}
	p.Page = min(max(page, 1), p.Pages)
	from := (p.Page - 1) * perPage

	firsts := newFirstJobs(from + perPage)
	each(func(o metav1.Object, team int, kind catalog.Kind) {
		firsts.offer(jobRef{name: o.GetName(), team: f.Teams[team], kind: kind, created: o.GetCreationTimestamp().UnixNano()})
	})
	for _, rf := range firsts.inOrder()[min(from, total):] {
		st, err := StatusOf(r.Jobs, Namespace(rf.team), rf.name, rf.kind)
		if err != nil {
			continue // deleted between list and get
		}
		st.Team = rf.team // the namespace's team, whatever the labels say
		p.Statuses = append(p.Statuses, st)
	}
	return p, nil
}

// jobRef is a job in the job list's order: newest first, then by team and name.
type jobRef struct {
	name, team string
	kind       catalog.Kind
	created    int64
}

func compareJobRefs(a, b jobRef) int {
	if c := cmp.Compare(b.created, a.created); c != 0 {
		return c
	}
	if c := strings.Compare(a.team, b.team); c != 0 {
		return c
	}
	return strings.Compare(a.name, b.name)
}

// firstJobs keeps the first n jobs offered to it in the list's order, in a
// heap whose root is the last of them: a job that comes later than the root
// costs one comparison, so a page near the top of 10,000 jobs sorts ~n.
type firstJobs struct {
	n    int
	heap []jobRef
}

func newFirstJobs(n int) *firstJobs { return &firstJobs{n: n, heap: make([]jobRef, 0, min(n, 1024))} }

func (f *firstJobs) offer(r jobRef) {
	h := f.heap
	if len(h) < f.n {
		h = append(h, r)
		for i := len(h) - 1; i > 0; {
			parent := (i - 1) / 2
			if compareJobRefs(h[i], h[parent]) <= 0 {
				break
			}
			h[i], h[parent] = h[parent], h[i]
			i = parent
		}
		f.heap = h
		return
	}
	if f.n == 0 || compareJobRefs(r, h[0]) >= 0 {
		return
	}
	h[0] = r
	for i := 0; ; {
		c := 2*i + 1
		if c >= len(h) {
			return
		}
		if c+1 < len(h) && compareJobRefs(h[c+1], h[c]) > 0 {
			c++
		}
		if compareJobRefs(h[c], h[i]) <= 0 {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}

// inOrder returns the kept jobs in the list's order.
func (f *firstJobs) inOrder() []jobRef {
	slices.SortFunc(f.heap, compareJobRefs)
	return f.heap
}
