package web

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/gantry-dev/gantry/internal/launch"
	"github.com/gantry-dev/gantry/internal/queue"
	"github.com/gantry-dev/gantry/views"
)

// countingCluster counts how often the team's running workloads are walked.
type countingCluster struct {
	*benchCluster
	walks atomic.Int64
}

func (c *countingCluster) NamespaceRunningWorkloads(ns string) ([]*kueue.Workload, error) {
	c.walks.Add(1)
	return c.benchCluster.NamespaceRunningWorkloads(ns)
}

// testClock is a clock the test moves.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func TestTeamPageSharesWaitAndCostFiguresForAFewSeconds(t *testing.T) {
	c := &countingCluster{benchCluster: newBenchCluster(300)}
	// The bench cluster's runs were admitted in the minutes before now.
	start := time.Now().UTC().Truncate(time.Second)
	clock := &testClock{now: start}
	h := &handler{Deps: Deps{Now: clock.Now, Log: slog.New(slog.DiscardHandler),
		Status: &StatusDeps{Reader: queue.StatusReader{Queues: c, Workloads: c}, Jobs: c, Costs: c}}, teamFigures: newTeamFiguresCache()}
	page := func() *goquery.Document {
		t.Helper()
		ts, err := h.teamStatusOf(t.Context(), benchTeam)
		require.NoError(t, err)
		var b strings.Builder
		require.NoError(t, views.TeamStatusPage(views.Nav{}, teamStatusProps(ts)).Render(t.Context(), &b))
		doc, err := goquery.NewDocumentFromReader(strings.NewReader(b.String()))
		require.NoError(t, err)
		return doc
	}

	var wg sync.WaitGroup
	for range benchUsers {
		wg.Go(func() { page() })
	}
	wg.Wait()
	assert.EqualValues(t, 1, c.walks.Load(), "%d people opening the page at once share one walk over the workloads", benchUsers)

	doc := page()
	first := testIDText(doc, "running-now")
	assert.Contains(t, testIDText(doc, "figures-as-of"), "as of "+start.Format("15:04:05")+" UTC", "the page says how fresh the figures are")
	assert.NotContains(t, first, "Running now: 0.00 GPU-hours", "the running jobs count")

	clock.Add(3 * time.Second)
	doc = page()
	assert.Equal(t, first, testIDText(doc, "running-now"), "a few seconds later the same figures")
	assert.Contains(t, testIDText(doc, "figures-as-of"), "as of "+start.Format("15:04:05")+" UTC")
	assert.EqualValues(t, 1, c.walks.Load())

	// Past five seconds the view is answered at once with the figures it
	// finds, and they are computed again behind it for the next views.
	clock.Add(3 * time.Second)
	doc = page()
	assert.Equal(t, first, testIDText(doc, "running-now"), "the view past five seconds is not kept waiting")
	assert.Contains(t, testIDText(doc, "figures-as-of"), "as of "+start.Format("15:04:05")+" UTC", "and says how old its figures are")
	require.Eventually(t, func() bool {
		return strings.Contains(testIDText(page(), "figures-as-of"), "as of "+start.Add(6*time.Second).Format("15:04:05")+" UTC")
	}, 5*time.Second, 10*time.Millisecond, "the next views get the figures computed again")
	assert.NotEqual(t, first, testIDText(page(), "running-now"), "and the running jobs have run longer")
	assert.EqualValues(t, 2, c.walks.Load(), "one walk for every view past five seconds")

	// After a quiet spell of ten seconds or more, the view waits for fresh figures.
	clock.Add(10 * time.Second)
	doc = page()
	assert.Contains(t, testIDText(doc, "figures-as-of"), "as of "+start.Add(16*time.Second).Format("15:04:05")+" UTC", "figures ten seconds old are not shown")
	assert.EqualValues(t, 3, c.walks.Load())
}

// BenchmarkTeamPageShared10k is the team page at 10,000 workloads as the
// portal serves it: running figures shared between requests.
func BenchmarkTeamPageShared10k(b *testing.B) {
	c := newBenchCluster(benchWorkloads)
	h := benchHandler(c)
	h.teamFigures = newTeamFiguresCache()
	defer reportHeap(b)
	runUsers(b, func() error {
		ts, err := h.teamStatusOf(context.Background(), benchTeam)
		if err != nil {
			return err
		}
		return views.TeamStatusPage(views.Nav{}, teamStatusProps(ts)).Render(context.Background(), io.Discard)
	})
}

// BenchmarkJobListPage10k is one page of the job list at 10,000 jobs.
func BenchmarkJobListPage10k(b *testing.B) {
	c := newBenchCluster(benchWorkloads)
	r := launch.Reader{Jobs: c}
	defer reportHeap(b)
	runUsers(b, func() error {
		jp, err := r.JobList(launch.JobFilter{Teams: []string{benchTeam}}, 3, jobsPerPage)
		if err != nil {
			return err
		}
		p := views.JobListProps{Total: jp.Total, Page: jp.Page, Pages: jp.Pages, Jobs: jobRows(jp.Statuses)}
		return views.JobListPage(views.Nav{}, p).Render(context.Background(), io.Discard)
	})
}

// The team's quota table lists what the team has or uses, not the zero
// rows Kueue needs for every covered resource in every flavor.
func TestQuotaTableLeavesOutPoolsWithNothingInThem(t *testing.T) {
	q := queue.QueueSummary{ClusterQueue: "team-vision", Flavors: []queue.FlavorUse{
		{Flavor: "cpu-general", Resource: "nvidia.com/gpu", Accelerator: true},
		{Flavor: "cpu-general", Resource: "cpu", Nominal: 64},
		{Flavor: "h100", Resource: "nvidia.com/gpu", Nominal: 8, Used: 2, Accelerator: true},
		{Flavor: "h100", Resource: "nvidia.com/mig-1g.10gb", Accelerator: true},
		{Flavor: "l40s", Resource: "nvidia.com/gpu", Used: 1, Borrowed: 1, Accelerator: true},
		{Flavor: "a100-mig", Resource: "nvidia.com/mig-1g.10gb", Nominal: 3, Lent: 3, Accelerator: true},
	}}
	var shown []string
	for _, r := range quotaRows(q) {
		shown = append(shown, r.Flavor+" "+r.Resource+" "+r.Nominal+"/"+r.Used+"/"+r.Borrowed+"/"+r.Lent)
	}
	assert.Equal(t, []string{
		"h100 nvidia.com/gpu 8/2/0/0",
		"l40s nvidia.com/gpu 0/1/1/0",
		"a100-mig nvidia.com/mig-1g.10gb 3/0/0/3",
	}, shown)
}
