package web

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
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
	"github.com/gantry-dev/gantry/internal/devcluster"
	"github.com/gantry-dev/gantry/internal/devcluster/stacktest"
	"github.com/gantry-dev/gantry/internal/identity"
	"github.com/gantry-dev/gantry/internal/kube"
	"github.com/gantry-dev/gantry/internal/launch"
	"github.com/gantry-dev/gantry/internal/store"
)

// jobLogsPortal serves the log routes over real HTTP, from a real job
// cache, launch records in Postgres and pods/log through the API server,
// to whoever the X-Test-User header names: a member of the job's team or
// of another team.
type jobLogsPortal struct {
	url         string
	team, other devcluster.Team
	job, pod    string
	log         *stacktest.PodLog
	logs        *kube.PodLogs
}

func newJobLogsPortal(t *testing.T) *jobLogsPortal {
	t.Helper()
	ctx := context.Background()
	env := stacktest.Stack(t)
	cpu := map[string]corev1.ResourceList{"cpu-general": {corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi")}}
	team := env.Team(t, stacktest.TeamSpec{Quotas: cpu})
	other := env.Team(t, stacktest.TeamSpec{})
	db, err := store.Open(ctx, stacktest.Postgres(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	require.NoError(t, store.Migrate(ctx, db.SQL(), slog.New(slog.DiscardHandler)))
	jobs, err := kube.NewJobCache(env.Kube, env.Kueue, 0)
	require.NoError(t, err)
	cctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	jobs.Start(cctx)
	require.NoError(t, jobs.WaitForSync(ctx))

	name := "pytorch-train-logs"
	job := stacktest.CompliantJob(team.Name, name, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")})
	job.Spec.Template.Annotations = map[string]string{"gantry.dev/simulate-duration": "10m"}
	_, err = env.Kube.BatchV1().Jobs(team.Namespace()).Create(ctx, job, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = db.RecordLaunch(ctx, store.Launch{LaunchID: "logs", Team: team.Name, Namespace: team.Namespace(), Name: name,
		Kind: "training", Template: "pytorch-train", TemplateVersion: 1, Owner: "alice", Parameters: json.RawMessage(`{}`),
		Objects: store.StringList{"Job/" + name}, Manifest: "kind: Job", CreatedAt: time.Now()})
	require.NoError(t, err)
	var pod string
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		pods, err := jobs.Pods(team.Namespace(), name)
		require.NoError(c, err)
		require.Len(c, pods, 1)
		assert.Equal(c, corev1.PodRunning, pods[0].Status.Phase)
		pod = pods[0].Name
	}, 60*time.Second, 250*time.Millisecond, "the job's pod runs")

	logs := &kube.PodLogs{Base: env.RESTConfig, Identities: identity.Prefixes{}, Pods: jobs}
	h := &handler{Deps: Deps{
		PublicURL: &url.URL{Scheme: "http", Host: "gantry.test"},
		Jobs:      launch.Reader{Templates: db, Records: db, Jobs: jobs},
		Logs:      logs,
		Log:       slog.New(slog.DiscardHandler),
		Now:       time.Now,
	}}
	engine := gin.New()
	engine.Use(func(c *gin.Context) {
		who := team
		if c.GetHeader("X-Test-User") == "other" {
			who = other
		}
		auth.SetCurrentUser(c, &auth.User{Username: "alice-" + who.Name, Role: auth.RoleResearcher,
			Teams: []auth.Membership{{Team: who.Name}}, ClusterGroups: who.MemberGroups})
	})
	engine.GET("/teams/:team/jobs/:name/logs", h.jobLogs)
	engine.GET("/teams/:team/jobs/:name/logs/download", h.jobLogsDownload)
	engine.GET("/api/v1/teams/:team/jobs/:name/logs", h.apiJobLogs)
	srv := httptest.NewServer(engine)
	t.Cleanup(srv.Close)
	return &jobLogsPortal{url: srv.URL, team: team, other: other, job: name, pod: pod,
		log: env.PodLog(t, team.Namespace(), pod, "main"), logs: logs}
}

func (p *jobLogsPortal) get(t *testing.T, ctx context.Context, path, user, accept string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url+path, nil)
	require.NoError(t, err)
	req.Header.Set("X-Test-User", user)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

func (p *jobLogsPortal) apiPath(query string) string {
	return "/api/v1/teams/" + p.team.Name + "/jobs/" + p.job + "/logs?" + query
}

func bodyOf(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

func TestLogsAPIReadsFollowsAndReadsPreviousContainerAsTheUser(t *testing.T) {
	p := newJobLogsPortal(t)
	ctx := t.Context()
	p.log.Append(t, "step 1 loss 2.31", "step 2 loss 1.87", "step 3 loss 1.52")
	p.log.AppendPrevious(t, "RuntimeError: CUDA out of memory")

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		resp := p.get(t, ctx, p.apiPath(""), "member", "")
		require.Equal(c, http.StatusOK, resp.StatusCode)
		assert.Equal(c, "step 1 loss 2.31\nstep 2 loss 1.87\nstep 3 loss 1.52\n", bodyOf(t, resp))
	}, 20*time.Second, 250*time.Millisecond, "the log as text")

	resp := p.get(t, ctx, p.apiPath("tailLines=2&container=main&pod="+p.pod), "member", "application/json")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var got struct {
		Pod, Container string
		Previous       bool
		Lines          []string
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&got))
	assert.Equal(t, p.pod, got.Pod)
	assert.Equal(t, "main", got.Container)
	assert.Equal(t, []string{"step 2 loss 1.87", "step 3 loss 1.52"}, got.Lines, "JSON: the last two lines")

	resp = p.get(t, ctx, p.apiPath("previous=true"), "member", "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "RuntimeError: CUDA out of memory\n", bodyOf(t, resp), "previous container's log")

	// Follow: lines written after the request arrive on the open stream.
	fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp = p.get(t, fctx, p.apiPath("follow=true&tailLines=1"), "member", "application/json")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, mimeNDJSON, resp.Header.Get("Content-Type"))
	lines := bufio.NewScanner(resp.Body)
	require.True(t, lines.Scan(), "first followed line: %v", lines.Err())
	assert.JSONEq(t, `{"line":"step 3 loss 1.52"}`, lines.Text())
	p.log.Append(t, "step 4 loss 1.20")
	require.True(t, lines.Scan(), "a line written later arrives: %v", lines.Err())
	assert.JSONEq(t, `{"line":"step 4 loss 1.20"}`, lines.Text())
	cancel()

	// Another team's member learns nothing of the job through the portal
	// (hidden, as every job route does), and the cluster itself refuses
	// them the pod's log: RBAC decides, not the portal alone.
	resp = p.get(t, ctx, p.apiPath(""), "other", "")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.NotContains(t, bodyOf(t, resp), "loss")
	_, err := p.logs.Open(ctx, "alice-"+p.other.Name, p.other.MemberGroups,
		kube.LogRequest{Namespace: p.team.Namespace(), Pod: p.pod, Container: "main"})
	assert.True(t, errors.Is(err, kube.ErrForbidden), "RBAC refuses another team's member, got %v", err)

	resp = p.get(t, ctx, p.apiPath("container=sidecar"), "member", "")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "a container the job does not have")
	resp = p.get(t, ctx, p.apiPath("tailLines=-1"), "member", "")
	assert.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
}

func TestLogPageShowsTheTailAndDownloadStreamsALargeLog(t *testing.T) {
	p := newJobLogsPortal(t)
	ctx := t.Context()
	const total = 100000
	// ~1 KiB a line: the whole log is about 100 MiB.
	pad := strings.Repeat("x", 1000)
	p.log.AppendN(t, total, func(i int) string { return fmt.Sprintf("line %06d %s", i+1, pad) })

	pagePath := "/teams/" + p.team.Name + "/jobs/" + p.job + "/logs"
	var doc *goquery.Document
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		resp := p.get(t, ctx, pagePath, "member", "")
		require.Equal(c, http.StatusOK, resp.StatusCode)
		var err error
		doc, err = goquery.NewDocumentFromReader(resp.Body)
		require.NoError(c, err)
		require.NotEmpty(c, testIDText(doc, "log-lines"))
	}, 20*time.Second, 250*time.Millisecond)
	shown := strings.Split(strings.TrimSuffix(doc.Find(`[data-testid="log-lines"]`).Text(), "\n"), "\n")
	require.Len(t, shown, pageTailLines, "the page shows the tail only")
	assert.True(t, strings.HasPrefix(shown[0], fmt.Sprintf("line %06d ", total-pageTailLines+1)))
	assert.True(t, strings.HasPrefix(shown[len(shown)-1], fmt.Sprintf("line %06d ", total)))
	older, ok := doc.Find(`[data-testid="log-older"]`).Attr("href")
	require.True(t, ok, "a link to older lines")
	resp := p.get(t, ctx, older, "member", "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	doc, err := goquery.NewDocumentFromReader(resp.Body)
	require.NoError(t, err)
	assert.Contains(t, testIDText(doc, "log-count"), fmt.Sprintf("%d lines shown", 4*pageTailLines))

	download, ok := doc.Find(`[data-testid="log-download"]`).Attr("href")
	require.True(t, ok)
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	resp = p.get(t, ctx, download, "member", "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, `attachment; filename=`+p.pod+`-main.log`, resp.Header.Get("Content-Disposition"))
	// Read as a browser saves it, watching the heap while the body flows.
	var peak uint64
	n, last, buf := 0, "", bufio.NewReaderSize(resp.Body, 64<<10)
	for {
		line, err := buf.ReadString('\n')
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		n++
		last = line
		if n%10000 == 0 {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapAlloc)
		}
	}
	assert.Equal(t, total, n, "the download has every line")
	assert.True(t, strings.HasPrefix(last, fmt.Sprintf("line %06d ", total)))
	growth := int64(peak) - int64(before.HeapAlloc)
	assert.Less(t, growth, int64(30<<20), "heap grew by %d MiB while ~100 MiB streamed", growth>>20)
}

// A container without a log is not said to have "not started" once its
// pod has ended: it ran, and its node no longer keeps the log.
func TestNoLogSaysWhetherTheContainerRanFromItsPodsPhase(t *testing.T) {
	for phase, want := range map[corev1.PodPhase]string{
		corev1.PodPending:   "There is no log yet: the container has not started.",
		corev1.PodRunning:   "There is no log yet: the container has not started, though its pod runs (an init container may still be at work).",
		corev1.PodSucceeded: "The container ran and has ended, but its log is gone: its node no longer keeps it. The job's page says how it ended.",
		corev1.PodFailed:    "The container ran and has ended, but its log is gone: its node no longer keeps it. The job's page says how it ended.",
	} {
		assert.Equal(t, want, noLogMessage(phase), phase)
	}
}
