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
)

// apiJobListItem is one job of the list, with its phase from the cluster.
type apiJobListItem struct {
	Name     string `json:"name"`
	Team     string `json:"team"`
	URL      string `json:"url"`
	Kind     string `json:"kind"`
	Phase    string `json:"phase"`
	Owner    string `json:"owner"`
	Template string `json:"template"`
	Pool     string `json:"pool"`
	// CreatedOutsideGantry is true for a workload made in the team's
	// namespace without the portal (kubectl): no owner or template.
	CreatedOutsideGantry bool `json:"createdOutsideGantry"`
}

// apiJobList is one page of a team's jobs, newest first; Next and Previous
// are the URLs of the neighbouring pages, empty at either end.
type apiJobList struct {
	Jobs     []apiJobListItem `json:"jobs"`
	Total    int              `json:"total"`
	Page     int              `json:"page"`
	Pages    int              `json:"pages"`
	Next     string           `json:"next,omitempty"`
	Previous string           `json:"previous,omitempty"`
	// Stale is set while the Kubernetes API server does not answer: the
	// list is the portal's last view of the cluster.
	Stale *apiStale `json:"stale,omitempty"`
}

// apiJobsList lists one page of a team's jobs from the cluster cache, as the
// jobs page does, narrowed by ?kind=, ?mine=1 and paged by ?page= and ?perPage=.
func (h *handler) apiJobsList(c *gin.Context) {
	u, _ := auth.CurrentUser(c)
	team := c.Param("team")
	if !canSeeTeam(u, team) {
		h.fail(c, errNotYourTeam)
		return
	}
	f := launch.JobFilter{Teams: []string{team}}
	if kind := c.Query("kind"); kind != "" {
		if !slices.Contains(jobKinds(), catalog.Kind(kind)) {
			h.apiInvalid(c, map[string]string{"kind": "Filter by one of the kinds: training, notebook or inference."})
			return
		}
		f.Kind = catalog.Kind(kind)
	}
	if c.Query("mine") != "" {
		f.Owner = u.Username
	}
	page, _ := strconv.Atoi(c.Query("page"))
	perPage := jobsPerPage
	if n, err := strconv.Atoi(c.Query("perPage")); err == nil && n > 0 {
		perPage = min(n, 500)
	}
	jp, err := h.Jobs.JobList(f, page, perPage)
	if err != nil {
		if errors.Is(err, kube.ErrNotSynced) {
			c.Header("Retry-After", "2")
		}
		h.fail(c, err)
		return
	}
	if err := h.Jobs.MarkOutside(c.Request.Context(), jp.Statuses); err != nil {
		h.fail(c, err)
		return
	}
	out := apiJobList{Jobs: make([]apiJobListItem, 0, len(jp.Statuses)), Total: jp.Total, Page: jp.Page, Pages: jp.Pages, Stale: h.apiStaleOf()}
	for _, s := range jp.Statuses {
		out.Jobs = append(out.Jobs, apiJobListItem{Name: s.Name, Team: s.Team, URL: h.PublicURL.String() + jobURL(s.Team, s.Name),
			Kind: string(s.Kind), Phase: string(s.Phase), Owner: s.Owner, Template: s.Template, Pool: s.Pool,
			CreatedOutsideGantry: s.Outside})
	}
	pageURL := func(n int) string {
		q := c.Request.URL.Query()
		q.Set("page", strconv.Itoa(n))
		return (&url.URL{Path: c.Request.URL.Path, RawQuery: q.Encode()}).String()
	}
	if jp.Page < jp.Pages {
		out.Next = pageURL(jp.Page + 1)
	}
	if jp.Page > 1 {
		out.Previous = pageURL(jp.Page - 1)
	}
	c.JSON(http.StatusOK, out)
}
