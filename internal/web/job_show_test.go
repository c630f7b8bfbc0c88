package web

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/internal/devcluster/stacktest"
	"github.com/gantry-dev/gantry/internal/devcluster/storetest"
	"github.com/gantry-dev/gantry/internal/identity"
	"github.com/gantry-dev/gantry/internal/kube"
	"github.com/gantry-dev/gantry/internal/launch"
	"github.com/gantry-dev/gantry/internal/money"
	"github.com/gantry-dev/gantry/internal/queue"
	"github.com/gantry-dev/gantry/internal/servertiming"
	"github.com/gantry-dev/gantry/internal/store"
)

// jobPages serves the job page, its status fragment and the JSON job to a
// member of a throwaway team, from a real job cache and launch records in
// Postgres, as the portal wires them.
type jobPages struct {
	env *stacktest.Env
	db  *store.Store
	// records keeps the launch records as the portal does; the tests
	// launch and delete through it, as a portal replica would.
	records *launch.KeptRecords
	team    string
	// members are the team's IdP groups (alice's).
	members []string
	queues  *kube.Cache
	engine  *gin.Engine
}

// jobPagesOption adds a source to the status reader the pages use
// (events, Prometheus); ctx ends with the test.
type jobPagesOption func(ctx context.Context, t *testing.T, env *stacktest.Env, r *queue.StatusReader)

func newJobPages(t *testing.T) *jobPages {
	t.Helper()
	// No quota: a Job created here stays queued.
	return newJobPagesFor(t, stacktest.TeamSpec{})
}

func newJobPagesFor(t *testing.T, spec stacktest.TeamSpec, opts ...jobPagesOption) *jobPages {
	t.Helper()
	ctx := context.Background()
	env := stacktest.Stack(t)
	team := env.Team(t, spec)
	db, dsn := storetest.Open(t)
	// Launch records and every job's rows are kept in memory, as the
	// portal keeps them.
	changes, _ := storetest.Listen(t, dsn)
	jobRows := db.KeepJobRows(changes, slog.New(slog.DiscardHandler))
	records := launch.NewKeptRecords(db, changes, slog.New(slog.DiscardHandler))
	require.NoError(t, records.Load(ctx))
	require.NoError(t, jobRows.Load(ctx))

	queues, err := kube.NewCache(env.Kueue, 0)
	require.NoError(t, err)
	jobs, err := kube.NewJobCache(env.Kube, env.Kueue, 0)
	require.NoError(t, err)
	cctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	queues.Start(cctx)
	jobs.Start(cctx)
	require.NoError(t, queues.WaitForSync(ctx))
	require.NoError(t, jobs.WaitForSync(ctx))

	reader := queue.StatusReader{Queues: queues, Workloads: jobs}
	for _, o := range opts {
		o(cctx, t, env, &reader)
	}
	h := &handler{Deps: Deps{
		PublicURL: &url.URL{Scheme: "http", Host: "gantry.test"},
		Jobs:      launch.Reader{Templates: db, Records: records, Jobs: jobs},
		Status:    &StatusDeps{Reader: reader, Jobs: jobs, Costs: db},
		Attempts:  db,
		Store:     db,
		Logs:      &kube.PodLogs{Base: env.RESTConfig, Identities: identity.Prefixes{}, Pods: jobs},
		Log:       slog.New(slog.DiscardHandler),
		Now:       time.Now,
	}}
	engine := gin.New()
	engine.Use(func(c *gin.Context) {
		auth.SetCurrentUser(c, &auth.User{Username: "alice", Role: auth.RoleResearcher, Teams: []auth.Membership{{Team: team.Name}},
			ClusterGroups: team.MemberGroups})
	})
	engine.GET("/teams/:team/jobs/:name", h.jobShow)
	engine.GET("/teams/:team/jobs/:name/status", h.jobStatusFragment)
	engine.GET("/teams/:team/jobs/:name/manifest", h.jobManifest)
	engine.GET("/api/v1/teams/:team/jobs/:name", h.apiJobGet)
	engine.GET("/api/v1/teams/:team/jobs/:name/status", h.apiJobStatus)
	return &jobPages{env: env, db: db, records: records, team: team.Name, members: team.MemberGroups, queues: queues, engine: engine}
}

// record stores a training launch of the team made at the given time.
func (p *jobPages) record(t *testing.T, name string, at time.Time) {
	t.Helper()
	_, err := p.records.RecordLaunchAudited(context.Background(), store.Launch{
		LaunchID: strings.TrimPrefix(name, "pytorch-train-"), Team: p.team, Namespace: "team-" + p.team, Name: name,
		Kind: "training", Template: "pytorch-train", TemplateVersion: 3, Owner: "alice",
		Parameters: json.RawMessage(`{"gpus":"2","memory":"16Gi"}`), Objects: store.StringList{"Job/" + name},
		Manifest: "kind: Job", CreatedAt: at,
	}, nil)
	require.NoError(t, err)
}

func (p *jobPages) get(t *testing.T, path string) (int, string) {
	t.Helper()
	code, body, _ := p.timed(t, path)
	return code, body
}

// timed is a view of path with what it waited on (servertiming).
func (p *jobPages) timed(t *testing.T, path string) (int, string, *servertiming.Timing) {
	t.Helper()
	ctx, timing := servertiming.Start(t.Context())
	rec := httptest.NewRecorder()
	p.engine.ServeHTTP(rec, httptest.NewRequestWithContext(ctx, http.MethodGet, path, nil))
	body, err := io.ReadAll(rec.Result().Body)
	require.NoError(t, err)
	return rec.Code, string(body), timing
}

func (p *jobPages) page(t *testing.T, path string) (int, *goquery.Document) {
	t.Helper()
	code, body := p.get(t, path)
	return code, htmlDoc(t, body)
}

func htmlDoc(t *testing.T, body string) *goquery.Document {
	t.Helper()
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
	require.NoError(t, err)
	return doc
}

// createJob creates job in the team's namespace, as a researcher's
// kubectl or a launch would, and returns the path of its page.
func (p *jobPages) createJob(t *testing.T, job *batchv1.Job) string {
	t.Helper()
	_, err := p.env.Kube.BatchV1().Jobs("team-"+p.team).Create(t.Context(), job, metav1.CreateOptions{})
	require.NoError(t, err)
	return "/teams/" + p.team + "/jobs/" + job.Name
}

func testIDText(doc *goquery.Document, id string) string {
	return strings.TrimSpace(doc.Find(`[data-testid="` + id + `"]`).First().Text())
}

func TestJustLaunchedJobIsShownAsBeingCreatedUntilTheCacheSeesIt(t *testing.T) {
	p := newJobPages(t)
	name := "pytorch-train-fresh00001"
	p.record(t, name, time.Now())
	jobPath := "/teams/" + p.team + "/jobs/" + name

	code, doc := p.page(t, jobPath)
	require.Equal(t, http.StatusOK, code, "the page right after the launch redirect")
	assert.Equal(t, "creating", testIDText(doc, "job-phase"))
	assert.Contains(t, testIDText(doc, "job-message"), "its status appears here in a few seconds")
	assert.Contains(t, doc.Find("p.muted").First().Text(), "pytorch-train")
	assert.Contains(t, doc.Find("p.muted").First().Text(), "version 3")
	params := testIDText(doc, "parameters")
	assert.Contains(t, params, "gpus")
	assert.Contains(t, params, "16Gi")
	assert.Equal(t, jobPath+"/status", doc.Find(`[data-testid="job-status"]`).AttrOr("data-refresh-url", ""), "the refresh script picks up the real status")
	assert.Equal(t, 1, doc.Find(`[data-testid="job-phase"]`).Length(), "one status panel, one phase")
	assert.Equal(t, 1, doc.Find(`[data-testid="delete"]`).Length(), "it can be deleted at once")
	manifestPath := doc.Find(`[data-testid="manifest-link"]`).AttrOr("href", "")
	require.Equal(t, jobPath+"/manifest", manifestPath, "the page links to the manifest")
	code, doc = p.page(t, manifestPath)
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, "kind: Job", testIDText(doc, "manifest"), "the manifest, read apart from the kept record")
	assert.Contains(t, doc.Find("p.muted").First().Text(), "pytorch-train")

	code, body := p.get(t, "/api/v1"+jobPath)
	require.Equal(t, http.StatusOK, code, body)
	var job apiJob
	require.NoError(t, json.Unmarshal([]byte(body), &job))
	assert.Equal(t, queue.PhaseCreating, job.Phase)
	assert.Equal(t, "pytorch-train", job.Template)
	assert.Equal(t, 3, job.Version)
	assert.Equal(t, map[string]string{"gpus": "2", "memory": "16Gi"}, job.Params)

	// The Job reaches the cache: the fragment the script polls turns into
	// the real status.
	job1 := stacktest.CompliantJob(p.team, name, corev1.ResourceList{"cpu": resource.MustParse("1"), "memory": resource.MustParse("1Gi")})
	p.createJob(t, job1)
	require.Eventually(t, func() bool {
		code, doc := p.page(t, jobPath+"/status")
		return code == http.StatusOK && testIDText(doc, "job-phase") == "queued"
	}, 30*time.Second, 100*time.Millisecond, "the fragment shows the cluster's status")
	code, body = p.get(t, "/api/v1"+jobPath)
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, `"phase":"queued"`)
}

func TestJobWithoutObjectsInTheCacheIsNotFoundUnlessJustLaunched(t *testing.T) {
	p := newJobPages(t)
	p.record(t, "pytorch-train-old0000001", time.Now().Add(-time.Hour))

	cases := map[string]struct{ name string }{
		"no launch record and nothing in the cluster": {name: "pytorch-train-none000001"},
		"launched an hour ago, objects gone since":    {name: "pytorch-train-old0000001"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			jobPath := "/teams/" + p.team + "/jobs/" + tc.name
			for _, path := range []string{jobPath, jobPath + "/status", "/api/v1" + jobPath} {
				code, body := p.get(t, path)
				assert.Equal(t, http.StatusNotFound, code, "%s: %s", path, body)
			}
		})
	}
}

// A job's page, its status fragment and the API's reads of the job show the
// job's own rows in PostgreSQL (the cost of its ended runs, its attempts)
// from the rows the portal keeps (store.KeepJobRows), with no round trip at
// all: on a busy machine every round trip waits for a core at both ends,
// and every open job page polls its fragment. After a write of them, the
// next view reads them in one round trip, not one each.
func TestJobPageReadsTheJobsOwnRowsInOneRoundTripThenNone(t *testing.T) {
	p := newJobPages(t)
	ctx := context.Background()
	name := "pytorch-train-rows000001"
	p.record(t, name, time.Now())
	ns := "team-" + p.team
	job := stacktest.CompliantJob(p.team, name, corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")})
	jobPath := p.createJob(t, job)
	ended := time.Now().Add(-time.Hour).UTC()
	_, err := p.db.RecordRun(ctx, store.LedgerRow{RunKey: name + "-1", WorkloadUID: "uid-1", Team: p.team, Namespace: ns, JobName: name,
		JobKind: "training", Owner: "alice", Flavor: "h100", Resource: "nvidia.com/gpu", GPUs: 1, CreatedAt: ended.Add(-2 * time.Hour),
		AdmittedAt: ended.Add(-time.Hour), EndedAt: ended, Outcome: "failed", AllocatedGPUHours: 1, USDPerHour: 3 * money.Dollar, CostUSD: 3 * money.Dollar})
	require.NoError(t, err)
	_, err = p.db.RecordJobMoment(ctx, store.JobMoment{Team: p.team, Namespace: ns, Job: name, MomentKey: "pod-1", Kind: store.MomentEnded,
		At: ended, Ending: "failed", Words: "It exited with code 1.", Pod: name + "-abcde"}, nil)
	require.NoError(t, err)

	require.Eventually(t, func() bool {
		code, doc := p.page(t, jobPath+"/status")
		return code == http.StatusOK && testIDText(doc, "job-phase") == "queued"
	}, time.Minute, 100*time.Millisecond, "the job is in the cache")

	// From then on the job's page, its status fragment (which an open page
	// polls) and the API's reads of the job answer from the rows kept of
	// it, with no round trip (once the notices of the job's writes are
	// heard). The launch record is kept too (launch.KeptRecords).
	views := map[string]func(t *testing.T, body string){
		jobPath: func(t *testing.T, body string) {
			doc := htmlDoc(t, body)
			assert.Equal(t, "$3.00", testIDText(doc, "cost-wasted"), "the failed run's cost")
			assert.Contains(t, testIDText(doc, "attempt-1"), "It exited with code 1.")
		},
		jobPath + "/status": func(t *testing.T, body string) {
			assert.Equal(t, "$3.00", testIDText(htmlDoc(t, body), "cost-wasted"), "the failed run's cost")
		},
		"/api/v1" + jobPath: func(t *testing.T, body string) {
			assert.Contains(t, body, `"words":"It exited with code 1."`)
		},
		"/api/v1" + jobPath + "/status": func(t *testing.T, body string) {
			assert.Contains(t, body, `"words":"It exited with code 1."`)
		},
	}
	assert.Eventually(t, func() bool {
		_, body, timing := p.timed(t, jobPath)
		_, calls := servertiming.Parse(timing.Header())
		return calls["db"] == 0 && strings.Contains(body, "It exited with code 1.")
	}, 10*time.Second, 20*time.Millisecond, "the job's page, then kept: no round trip")
	for path, check := range views {
		code, body, timing := p.timed(t, path)
		require.Equal(t, http.StatusOK, code, "%s: %s", path, body)
		_, calls := servertiming.Parse(timing.Header())
		assert.Zero(t, calls["db"], "%s: no round trip", path)
		check(t, body)
	}

	// A new row of the job: its next view reads the job's rows again, in
	// one round trip, and shows it; then they are kept again.
	for _, m := range []store.JobMoment{
		{MomentKey: "pod-2-started", Kind: store.MomentStarted, At: ended.Add(time.Minute)},
		{MomentKey: "pod-2", Kind: store.MomentEnded, At: ended.Add(2 * time.Minute), Ending: "failed", Words: "It exited with code 2."},
	} {
		m.Team, m.Namespace, m.Job, m.Pod = p.team, ns, name, name+"-fghij"
		_, err = p.db.RecordJobMoment(ctx, m, nil)
		require.NoError(t, err)
	}
	code, body, timing := p.timed(t, jobPath)
	require.Equal(t, http.StatusOK, code, body)
	_, calls := servertiming.Parse(timing.Header())
	assert.Equal(t, 1, calls["db"], "the job's rows are one round trip")
	assert.Contains(t, body, "It exited with code 2.")
	assert.Eventually(t, func() bool {
		_, body, timing := p.timed(t, jobPath+"/status")
		_, calls := servertiming.Parse(timing.Header())
		return calls["db"] == 0 && strings.Contains(body, "$3.00")
	}, 10*time.Second, 20*time.Millisecond, "kept again")
}

// A job deleted through Gantry keeps its page: deleted, by whom and when,
// with Relaunch (it used to answer 404, leaving the team to guess).
func TestJobDeletedThroughGantrySaysWhoDeletedIt(t *testing.T) {
	p := newJobPages(t)
	name := "pytorch-train-gone000001"
	p.record(t, name, time.Now())
	at := time.Date(2026, 3, 4, 10, 30, 0, 0, time.UTC)
	require.NoError(t, p.records.MarkLaunchDeleted(context.Background(), "team-"+p.team, name, "bob", at))
	jobPath := "/teams/" + p.team + "/jobs/" + name

	for _, path := range []string{jobPath, jobPath + "/status"} {
		code, doc := p.page(t, path)
		require.Equal(t, http.StatusOK, code, path)
		assert.Equal(t, "deleted", testIDText(doc, "job-phase"), path)
		assert.Equal(t, "It was deleted by bob at 2026-03-04 10:30 UTC.", testIDText(doc, "cause-words"), path)
		assert.Equal(t, "Relaunch it if it was deleted by mistake; its cost so far stays in the ledger.", testIDText(doc, "cause-next"), path)
		assert.Equal(t, "/launch/pytorch-train?relaunch="+name+"&team="+p.team, doc.Find(`[data-testid="relaunch"]`).AttrOr("href", ""), path)
	}
	_, doc := p.page(t, jobPath)
	assert.Equal(t, 0, doc.Find(`[data-testid="delete"]`).Length(), "nothing left to delete")

	code, body := p.get(t, "/api/v1"+jobPath+"/status")
	require.Equal(t, http.StatusOK, code, body)
	var st apiJobStatusBody
	require.NoError(t, json.Unmarshal([]byte(body), &st))
	assert.Equal(t, queue.PhaseDeleted, st.Phase)
	require.NotNil(t, st.Cause, body)
	assert.Equal(t, queue.CauseDeleted, st.Cause.Kind)
	assert.Equal(t, "It was deleted by bob at 2026-03-04 10:30 UTC.", st.Cause.Words)
	code, body = p.get(t, "/api/v1"+jobPath)
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, `"phase":"deleted"`)
}

// An out-of-memory ending reads the same on the page and in the API: the
// limit it hit, what to do, and Relaunch carrying twice the memory.
func TestOutOfMemoryJobPageAndAPIShowTheCauseAndTheFix(t *testing.T) {
	const pool = "h100-sxm-ib-training"
	p := newJobPagesFor(t, stacktest.TeamSpec{Quotas: map[string]corev1.ResourceList{
		pool: {"nvidia.com/gpu": resource.MustParse("1"), "cpu": resource.MustParse("4"), "memory": resource.MustParse("16Gi")},
	}})
	name := "pytorch-train-oom0000001"
	p.record(t, name, time.Now())
	job := stacktest.CompliantJob(p.team, name, corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1"), "cpu": resource.MustParse("1"), "memory": resource.MustParse("1Gi")})
	job.Spec.Template.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory] = resource.MustParse("1Gi")
	stacktest.OnPool(job, pool)
	job.Spec.Template.Annotations = map[string]string{"gantry.dev/simulate-duration": "1s", "gantry.dev/simulate-exit-code": "137", "gantry.dev/simulate-reason": "OOMKilled"}
	job.Spec.BackoffLimit = new(int32(0))
	jobPath := p.createJob(t, job)

	var doc *goquery.Document
	require.Eventually(t, func() bool {
		var code int
		code, doc = p.page(t, jobPath)
		return code == http.StatusOK && testIDText(doc, "job-phase") == "failed" && testIDText(doc, "cause-words") != ""
	}, time.Minute, 250*time.Millisecond, "the job fails out of memory")
	assert.Equal(t, 1, doc.Find(`[data-testid="job-phase"]`).Length(), "one status panel")
	words := testIDText(doc, "cause-words")
	assert.Regexp(t, `^Container main of pod `+name+`-\w+ ran out of memory: it reached its 1Gi limit \(peak unknown\) and was killed\.$`, words)
	assert.Equal(t, "Relaunch it with more memory (2Gi), or use a smaller batch.", testIDText(doc, "cause-next"))
	assert.Equal(t, "with memory 1Gi → 2Gi", testIDText(doc, "cause-fix"))
	assert.Equal(t, "/launch/pytorch-train?memory=2Gi&relaunch="+name+"&team="+p.team, doc.Find(`[data-testid="relaunch"]`).AttrOr("href", ""))
	assert.Equal(t, "137", testIDText(doc, "exit-code"))
	assert.Equal(t, 1, doc.Find(`[data-testid="pods"] tbody tr`).Length(), "its pod stays listed")
	assert.Zero(t, doc.Find(`[data-testid="ready-pods"]`).Length(), "no \"0 of 1 pods ready\" under an ended job")

	code, body := p.get(t, "/api/v1"+jobPath+"/status")
	require.Equal(t, http.StatusOK, code, body)
	var st apiJobStatusBody
	require.NoError(t, json.Unmarshal([]byte(body), &st))
	assert.Equal(t, queue.PhaseFailed, st.Phase)
	require.NotNil(t, st.Cause, body)
	assert.Equal(t, queue.CauseOutOfMemory, st.Cause.Kind)
	assert.Equal(t, words, st.Cause.Words, "the page and the API say the same")
	assert.Equal(t, &apiFix{Field: "memory", Value: "2Gi", Words: "memory 1Gi → 2Gi"}, st.Cause.Fix)
	assert.Contains(t, body, `"relaunchUrl":"/launch/pytorch-train?memory=2Gi\u0026relaunch=`+name)
	assert.Contains(t, body, `"oomKilled":true`, "camelCase JSON")
	assert.Contains(t, body, `"allocation":{"flavor":"`+pool+`"`)
}

// A program's own error: the exit code and the last lines it printed,
// read as the user, on the page and in the API.
func TestFailedJobShowsExitCodeAndLastLogLines(t *testing.T) {
	cpu := map[string]corev1.ResourceList{"cpu-general": {corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi")}}
	p := newJobPagesFor(t, stacktest.TeamSpec{Quotas: cpu})
	name := "pytorch-train-exit000001"
	p.record(t, name, time.Now())
	job := stacktest.CompliantJob(p.team, name, corev1.ResourceList{"cpu": resource.MustParse("1"), "memory": resource.MustParse("1Gi")})
	job.Spec.Template.Annotations = map[string]string{"gantry.dev/simulate-duration": "4s", "gantry.dev/simulate-exit-code": "2"}
	job.Spec.BackoffLimit = new(int32(0))
	ns := "team-" + p.team
	p.createJob(t, job)
	var pod string
	require.Eventually(t, func() bool {
		pods, err := p.env.Kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "job-name=" + name})
		if err != nil || len(pods.Items) != 1 {
			return false
		}
		pod = pods.Items[0].Name
		return true
	}, time.Minute, 100*time.Millisecond)
	p.env.PodLog(t, ns, pod, "main").Append(t, "epoch 3 loss 0.41", "KeyError: 'label'")
	jobPath := "/teams/" + p.team + "/jobs/" + name

	var doc *goquery.Document
	require.Eventually(t, func() bool {
		var code int
		code, doc = p.page(t, jobPath)
		return code == http.StatusOK && testIDText(doc, "job-phase") == "failed" && testIDText(doc, "cause-log") != ""
	}, time.Minute, 250*time.Millisecond, "the job fails with its log shown")
	assert.Equal(t, "Container main of pod "+pod+" exited with code 2.", testIDText(doc, "cause-words"))
	assert.Equal(t, "Read its last log lines, fix the error and relaunch it.", testIDText(doc, "cause-next"))
	assert.Equal(t, "epoch 3 loss 0.41KeyError: 'label'", testIDText(doc, "cause-log"))
	assert.Equal(t, "/launch/pytorch-train?relaunch="+name+"&team="+p.team, doc.Find(`[data-testid="relaunch"]`).AttrOr("href", ""), "no fix to carry")

	code, body := p.get(t, "/api/v1"+jobPath+"/status")
	require.Equal(t, http.StatusOK, code, body)
	var st apiJobStatusBody
	require.NoError(t, json.Unmarshal([]byte(body), &st))
	require.NotNil(t, st.Cause, body)
	assert.Equal(t, queue.CauseExitCode, st.Cause.Kind)
	assert.Equal(t, []string{"epoch 3 loss 0.41", "KeyError: 'label'"}, st.Cause.LogTail)
	assert.Equal(t, int32(2), st.Failure.ExitCode)
}

// A workload made outside the portal has no launch manifest: its page
// links to none, and the manifest page says why in words.
func TestOutsideJobHasNoManifestPage(t *testing.T) {
	p := newJobPages(t)
	name := "kubectl-made-00001"
	job := stacktest.CompliantJob(p.team, name, corev1.ResourceList{"cpu": resource.MustParse("1"), "memory": resource.MustParse("1Gi")})
	jobPath := p.createJob(t, job)
	var doc *goquery.Document
	require.Eventually(t, func() bool {
		var code int
		code, doc = p.page(t, jobPath)
		return code == http.StatusOK
	}, time.Minute, 100*time.Millisecond, "the job is in the cache")
	assert.Zero(t, doc.Find(`[data-testid="manifest-link"]`).Length(), "no manifest to link to")

	code, body := p.get(t, jobPath+"/manifest")
	assert.Equal(t, http.StatusNotFound, code)
	assert.Contains(t, body, "made outside the portal")
}
