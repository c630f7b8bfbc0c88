package web

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/internal/catalog"
	"github.com/gantry-dev/gantry/internal/kube"
	"github.com/gantry-dev/gantry/internal/launch"
	"github.com/gantry-dev/gantry/views"
)

// jobsPerPage is how many jobs one page of the job list shows.
const jobsPerPage = 50

// jobKinds are the kinds the job list filters by, in the form's order.
func jobKinds() []catalog.Kind {
	return []catalog.Kind{catalog.KindTraining, catalog.KindNotebook, catalog.KindInference}
}

// jobsList lists one page of the jobs of the user's teams from the cluster
// cache, newest first, narrowed by ?team=, ?kind= and ?mine=1.
func (h *handler) jobsList(c *gin.Context) {
	u, _ := auth.CurrentUser(c)
	teams := teamNames(u)
	fv := views.JobListFilter{Team: c.Query("team"), Kind: c.Query("kind"), Mine: c.Query("mine") != ""}
	if fv.Team != "" && !slices.Contains(teams, fv.Team) {
		h.fail(c, errNotYourTeam)
		return
	}
	if !slices.Contains(jobKinds(), catalog.Kind(fv.Kind)) {
		fv.Kind = ""
	}
	f := launch.JobFilter{Teams: teams, Kind: catalog.Kind(fv.Kind)}
	if fv.Team != "" {
		f.Teams = []string{fv.Team}
	}
	if fv.Mine {
		f.Owner = u.Username
	}
	page, _ := strconv.Atoi(c.Query("page"))

	p := views.JobListProps{Filter: fv, Teams: teams, Page: 1, Pages: 1}
	for _, k := range jobKinds() {
		p.Kinds = append(p.Kinds, string(k))
	}
	jp, err := h.Jobs.JobList(f, page, jobsPerPage)
	switch {
	case errors.Is(err, kube.ErrNotSynced):
		p.Error = "The portal is still reading the cluster; jobs appear in a moment. Reload the page."
	case err != nil:
		h.fail(c, err)
		return
	default:
		p.Total, p.Page, p.Pages = jp.Total, jp.Page, jp.Pages
		if err := h.Jobs.MarkOutside(c.Request.Context(), jp.Statuses); err != nil {
			h.fail(c, err)
			return
		}
		p.Jobs = jobRows(jp.Statuses)
	}
	if p.Page > 1 {
		p.NewerURL = jobsPageURL(fv, p.Page-1)
	}
	if p.Page < p.Pages {
		p.OlderURL = jobsPageURL(fv, p.Page+1)
	}
	h.render(c, http.StatusOK, views.JobListPage(h.nav(c, "jobs"), p))
}

// jobRows are the job list's rows for a page's jobs, in one slice of
// their number (grown from empty, 12 of the 99 KB a view of the list
// allocated in BenchmarkJobListPage10k).
func jobRows(statuses []launch.Status) []views.JobRow {
	rows := make([]views.JobRow, 0, len(statuses))
	for _, s := range statuses {
		rows = append(rows, views.JobRow{Team: s.Team, Name: s.Name, Kind: string(s.Kind), Owner: s.Owner, Template: s.Template,
			Phase: string(s.Phase), Pool: s.Pool, URL: jobURL(s.Team, s.Name), Outside: s.Outside})
	}
	return rows
}

// jobsPageURL is the job list's URL for page with the same filter.
func jobsPageURL(f views.JobListFilter, page int) string {
	q := url.Values{}
	if f.Team != "" {
		q.Set("team", f.Team)
	}
	if f.Kind != "" {
		q.Set("kind", f.Kind)
	}
	if f.Mine {
		q.Set("mine", "1")
	}
	if page > 1 {
		q.Set("page", strconv.Itoa(page))
	}
	if len(q) == 0 {
		return "/jobs"
	}
	return "/jobs?" + q.Encode()
}
