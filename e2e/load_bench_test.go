package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	kueueclient "sigs.k8s.io/kueue/client-go/clientset/versioned"

	"github.com/gantry-dev/gantry/internal/catalog"
	"github.com/gantry-dev/gantry/internal/devcluster"
	"github.com/gantry-dev/gantry/internal/devcluster/stacktest"
	"github.com/gantry-dev/gantry/internal/store"
)

// The load run of issue 5: job list, job page and team page of a team with
// loadWorkloads Jobs and Kueue Workloads, loadUsers users at once.
const (
	loadWorkloads   = 10_000
	loadUsers       = 50
	loadRequests    = 2_000 // per page
	loadJobPages    = 100   // distinct job pages the requests rotate over
	loadWorkers     = 16    // parallel creates against the API server
	loadCreateLimit = 15 * time.Minute
	loadPageLimit   = 10 * time.Minute
	loadRequestTime = time.Minute
)

// BenchmarkPagesWith10000Workloads is `make bench`'s load run. It only runs
// with -bench, never with `go test` alone, because it creates 10,000 Jobs
// and 10,000 Workloads in a throwaway team namespace, deleted with the team
// at the end.
func BenchmarkPagesWith10000Workloads(b *testing.B) {
	env := stacktest.Stack(b)
	team := env.Team(b, stacktest.TeamSpec{MemberGroups: []string{"vision-researchers"}, LeadGroups: []string{"vision-leads"}})

	start := time.Now()
	populate(b, env, team.Name, loadWorkloads)
	b.Logf("created %d Jobs and %d Workloads in %s in %s", loadWorkloads, loadWorkloads, team.Namespace(), time.Since(start).Round(time.Second))

	dsn := stacktest.Postgres(b)
	portal := StartPortal(b, WithDatabase(dsn), WithEnv("GANTRY_LOG_LEVEL", "warn"))
	db, err := store.Open(b.Context(), dsn)
	require.NoError(b, err)
	b.Cleanup(func() { _ = db.Close() })
	require.NoError(b, store.Migrate(b.Context(), db.SQL(), slog.New(slog.DiscardHandler)))
	require.NoError(b, db.UpsertTeams(b.Context(), []store.Team{{Name: team.Name, DisplayName: "Load team",
		MemberGroups: store.StringList{"vision-researchers"}, LeadGroups: store.StringList{"vision-leads"}}}))
	for i := range loadJobPages {
		name := loadJobName(i)
		_, err := db.RecordLaunch(b.Context(), store.Launch{LaunchID: "load-" + team.Name + "-" + name, Team: team.Name,
			Namespace: team.Namespace(), Name: name, Kind: string(catalog.KindTraining), Template: "stacktest", TemplateVersion: 1,
			Owner: "alice", Parameters: []byte(`{}`), Manifest: "# load run"})
		require.NoError(b, err)
	}

	browser := NewBrowser(b, portal)
	browser.LoginAs("alice")
	client := loadClient(b, browser, portal)

	// The caches hold every object once the job list counts all of them
	// (it shows them a page at a time).
	jobsURL := portal.URL + "/jobs"
	require.Eventually(b, func() bool {
		body, status := get(client, jobsURL)
		return status == http.StatusOK && strings.Contains(body, fmt.Sprintf(`data-testid="jobs-count">%d<`, loadWorkloads))
	}, 5*time.Minute, time.Second, "the job list counts all %d jobs", loadWorkloads)

	pages := []struct {
		name string
		path func(i int) string
	}{
		{"joblist", func(int) string { return "/jobs" }},
		{"jobpage", func(i int) string { return "/teams/" + team.Name + "/jobs/" + loadJobName(i%loadJobPages) }},
		{"teampage", func(int) string { return "/teams/" + team.Name }},
	}
	for range b.N {
		for _, p := range pages {
			name := p.name
			lat, failed := load(b, client, portal.URL, p.path)
			require.Zero(b, failed, "%s: requests that did not answer 200", name)
			p50, p99 := quantile(lat, 0.50), quantile(lat, 0.99)
			b.ReportMetric(float64(p50.Microseconds())/1000, name+"-p50-ms")
			b.ReportMetric(float64(p99.Microseconds())/1000, name+"-p99-ms")
			b.Logf("%-8s %d requests, %d users: p50 %s, p99 %s, max %s", name, len(lat), loadUsers,
				p50.Round(time.Microsecond), p99.Round(time.Microsecond), slices.Max(lat).Round(time.Microsecond))
		}
	}
	rss := procRSS(b, portal.proc.cmd.Process.Pid)
	heap := metricValue(b, portal.URL+"/metrics", "go_memstats_heap_inuse_bytes")
	b.ReportMetric(float64(rss)/(1<<20), "portal-rss-MiB")
	b.ReportMetric(heap/(1<<20), "portal-heap-inuse-MiB")
	b.Logf("portal memory with %d Jobs and %d Workloads cached: RSS %d MiB, heap in use %.0f MiB",
		loadWorkloads, loadWorkloads, rss>>20, heap/(1<<20))
}

func loadJobName(i int) string { return fmt.Sprintf("load-%05d", i) }

// populate creates n suspended compliant Jobs and, for each, the Kueue
// Workload Kueue would make (pre-built and inactive, so Kueue neither
// creates nor schedules anything and kwok runs no pods).
func populate(b *testing.B, env *stacktest.Env, team string, n int) {
	b.Helper()
	cfg := rest.CopyConfig(env.RESTConfig)
	cfg.QPS, cfg.Burst = 1000, 2000
	kc, err := kubernetes.NewForConfig(cfg)
	require.NoError(b, err)
	qc, err := kueueclient.NewForConfig(cfg)
	require.NoError(b, err)
	ctx, cancel := context.WithTimeout(b.Context(), loadCreateLimit)
	defer cancel()
	ns := devcluster.Team{Name: team}.Namespace()
	next := make(chan int)
	var wg sync.WaitGroup
	var firstErr atomic.Pointer[error]
	for range loadWorkers {
		wg.Go(func() {
			for i := range next {
				if err := createWorkload(ctx, kc, qc, team, ns, loadJobName(i)); err != nil {
					firstErr.CompareAndSwap(nil, &err)
					cancel()
				}
			}
		})
	}
	for i := range n {
		select {
		case next <- i:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(next)
	wg.Wait()
	if p := firstErr.Load(); p != nil {
		b.Fatalf("create load: %v", *p)
	}
	require.NoError(b, ctx.Err(), "create %d workloads within %s", n, loadCreateLimit)
}

func createWorkload(ctx context.Context, kc kubernetes.Interface, qc kueueclient.Interface, team, ns, name string) error {
	job := stacktest.CompliantJob(team, name, corev1.ResourceList{"cpu": resource.MustParse("100m"), "memory": resource.MustParse("128Mi")})
	job.Labels["kueue.x-k8s.io/prebuilt-workload-name"] = name
	created, err := kc.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create job %s: %w", name, err)
	}
	wl := &kueue.Workload{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
			Labels: map[string]string{"kueue.x-k8s.io/job-uid": string(created.UID)},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: batchv1.SchemeGroupVersion.String(), Kind: "Job",
				Name: name, UID: created.UID, Controller: ptr.To(true)}}},
		Spec: kueue.WorkloadSpec{
			QueueName: kueue.LocalQueueName(devcluster.LocalQueueName),
			Active:    ptr.To(false),
			PodSets:   []kueue.PodSet{{Name: kueue.DefaultPodSetName, Count: ptr.Deref(created.Spec.Parallelism, 1), Template: created.Spec.Template}},
		},
	}
	if _, err := qc.KueueV1beta2().Workloads(ns).Create(ctx, wl, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create workload %s: %w", name, err)
	}
	return nil
}

// loadClient is an HTTP client carrying the browser's session cookie, with
// a connection per simulated user.
func loadClient(b *testing.B, br *Browser, p *Portal) *http.Client {
	b.Helper()
	ctx, cancel := context.WithTimeout(br.ctx, 10*time.Second)
	defer cancel()
	res, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{p.URL}})
	require.NoError(b, err)
	jar, err := cookiejar.New(nil)
	require.NoError(b, err)
	u, err := url.Parse(p.URL)
	require.NoError(b, err)
	var cookies []*http.Cookie
	for _, c := range res.Cookies {
		cookies = append(cookies, &http.Cookie{Name: c.Name, Value: c.Value, Path: c.Path})
	}
	require.NotEmpty(b, cookies, "browser has no portal cookies after login")
	jar.SetCookies(u, cookies)
	return &http.Client{
		Jar:           jar,
		Timeout:       loadRequestTime,
		Transport:     &http.Transport{MaxIdleConnsPerHost: loadUsers, MaxConnsPerHost: loadUsers},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// load sends loadRequests GETs from loadUsers users at once and returns
// their latencies and how many did not answer 200.
func load(b *testing.B, client *http.Client, base string, path func(i int) string) ([]time.Duration, int) {
	b.Helper()
	ctx, cancel := context.WithTimeout(b.Context(), loadPageLimit)
	defer cancel()
	lat := make([]time.Duration, loadRequests)
	var next, failed atomic.Int64
	var wg sync.WaitGroup
	for range loadUsers {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= loadRequests {
					return
				}
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path(i), nil)
				if err != nil {
					failed.Add(1)
					continue
				}
				t0 := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					failed.Add(1)
					continue
				}
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				lat[i] = time.Since(t0)
				if err != nil || resp.StatusCode != http.StatusOK {
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	require.NoError(b, ctx.Err(), "%d requests within %s", loadRequests, loadPageLimit)
	return lat, int(failed.Load())
}

func get(client *http.Client, u string) (string, int) {
	resp, err := client.Get(u)
	if err != nil {
		return "", 0
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", 0
	}
	return string(body), resp.StatusCode
}

// quantile of latencies (0..1), nearest rank.
func quantile(lat []time.Duration, q float64) time.Duration {
	s := slices.Clone(lat)
	slices.Sort(s)
	i := int(q*float64(len(s)) + 0.5)
	return s[min(max(i-1, 0), len(s)-1)]
}

// procRSS is the resident memory of a process, from /proc/<pid>/status.
func procRSS(b *testing.B, pid int) int64 {
	b.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(b, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			require.NoError(b, err)
			return kb << 10
		}
	}
	b.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}

// metricValue reads one unlabelled sample from a Prometheus text endpoint.
func metricValue(b *testing.B, u, name string) float64 {
	b.Helper()
	resp, err := http.Get(u)
	require.NoError(b, err)
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			require.NoError(b, err)
			return f
		}
	}
	b.Fatalf("no %s on %s", name, u)
	return 0
}
