package web

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/internal/devcluster/stacktest"
	"github.com/gantry-dev/gantry/internal/kube"
	"github.com/gantry-dev/gantry/internal/launch"
	"github.com/gantry-dev/gantry/internal/naming"
)

// jobListJobs is how many Jobs the job list test creates: a full page and a
// few more; every tenth is alice's.
const jobListJobs = jobsPerPage + 6

// TestJobListPagesAndFilters serves /jobs from a real job cache over a
// throwaway team with more jobs than fit on a page.
func TestJobListPagesAndFilters(t *testing.T) {
	ctx := context.Background()
	env := stacktest.Stack(t)
	team := env.Team(t, stacktest.TeamSpec{})
	jobs, err := kube.NewJobCache(env.Kube, env.Kueue, 0)
	require.NoError(t, err)
	cctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	jobs.Start(cctx)
	require.NoError(t, jobs.WaitForSync(ctx))

	var wg sync.WaitGroup
	errs := make(chan error, jobListJobs)
	for i := range jobListJobs {
		wg.Go(func() {
			job := stacktest.CompliantJob(team.Name, fmt.Sprintf("list-%02d", i), corev1.ResourceList{"cpu": resource.MustParse("100m")})
			if i%10 == 0 {
				job.Labels[naming.LabelOwner] = "alice"
			}
			_, err := env.Kube.BatchV1().Jobs(team.Namespace()).Create(ctx, job, metav1.CreateOptions{})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}

	h := &handler{Deps: Deps{
		PublicURL: &url.URL{Scheme: "http", Host: "gantry.test"},
		Jobs:      launch.Reader{Jobs: jobs},
		Log:       slog.New(slog.DiscardHandler),
		Now:       time.Now,
	}}
	engine := gin.New()
	engine.Use(func(c *gin.Context) {
		auth.SetCurrentUser(c, &auth.User{Username: "alice", Role: auth.RoleResearcher, Teams: []auth.Membership{{Team: team.Name}}})
	})
	engine.GET("/jobs", h.jobsList)
	p := &jobPages{engine: engine}

	require.Eventually(t, func() bool {
		_, doc := p.page(t, "/jobs")
		return testIDText(doc, "jobs-count") == fmt.Sprint(jobListJobs)
	}, time.Minute, 200*time.Millisecond, "the list counts every job of the team")

	rows := func(doc *goquery.Document) []string {
		var out []string
		doc.Find(`[data-testid="job-list"] tbody tr`).Each(func(_ int, s *goquery.Selection) {
			out = append(out, strings.TrimPrefix(s.AttrOr("data-testid", ""), "job-"))
		})
		return out
	}
	link := func(doc *goquery.Document, id string) string {
		return doc.Find(`[data-testid="`+id+`"]`).AttrOr("href", "")
	}

	code, doc := p.page(t, "/jobs")
	require.Equal(t, http.StatusOK, code)
	first := rows(doc)
	assert.Len(t, first, jobsPerPage, "one page of jobs")
	assert.Contains(t, testIDText(doc, "jobs-total"), "page 1 of 2")
	assert.Empty(t, link(doc, "newer"), "nothing newer than the first page")
	assert.Equal(t, "/jobs?page=2", link(doc, "older"))
	assert.Equal(t, "/teams/"+team.Name+"/jobs/"+first[0], doc.Find(`[data-testid="job-`+first[0]+`"] a`).AttrOr("href", ""))

	code, doc = p.page(t, link(doc, "older"))
	require.Equal(t, http.StatusOK, code)
	second := rows(doc)
	assert.Len(t, second, jobListJobs-jobsPerPage, "the rest on the second page")
	assert.Empty(t, link(doc, "older"), "nothing older than the last page")
	assert.Equal(t, "/jobs", link(doc, "newer"))
	all := append(append([]string{}, first...), second...)
	for i := range jobListJobs {
		assert.Contains(t, all, fmt.Sprintf("list-%02d", i), "every job on exactly one page")
	}
	assert.Len(t, all, jobListJobs)

	_, doc = p.page(t, "/jobs?mine=1&team="+team.Name)
	mine := rows(doc)
	slices.Sort(mine)
	assert.Equal(t, []string{"list-00", "list-10", "list-20", "list-30", "list-40", "list-50"}, mine, "only alice's jobs")
	assert.Equal(t, "6", testIDText(doc, "jobs-count"))
	assert.True(t, doc.Find(`[data-testid="filter-mine"]`).Is("[checked]"), "the form shows the filter in use")

	_, doc = p.page(t, "/jobs?kind=notebook")
	assert.Equal(t, "No job matches the filter.", testIDText(doc, "no-jobs"))

	code, _ = p.page(t, "/jobs?team=nlp")
	assert.Equal(t, http.StatusNotFound, code, "another team's jobs are hidden as if they did not exist")
}
