package acceptance_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/gantry-dev/gantry/internal/acceptance"
	"github.com/gantry-dev/gantry/internal/audit"
	"github.com/gantry-dev/gantry/internal/cost"
	"github.com/gantry-dev/gantry/internal/devcluster"
	"github.com/gantry-dev/gantry/internal/devcluster/simworkload"
	"github.com/gantry-dev/gantry/internal/devcluster/stacktest"
	"github.com/gantry-dev/gantry/internal/gpu"
	"github.com/gantry-dev/gantry/internal/kube"
	"github.com/gantry-dev/gantry/internal/launch"
	"github.com/gantry-dev/gantry/internal/leader"
	"github.com/gantry-dev/gantry/internal/money"
	"github.com/gantry-dev/gantry/internal/naming"
	"github.com/gantry-dev/gantry/internal/policy"
	"github.com/gantry-dev/gantry/internal/queue"
	"github.com/gantry-dev/gantry/internal/roster"
	"github.com/gantry-dev/gantry/internal/store"
)

const h100 = "h100-sxm-ib-training"

func repoPath(parts ...string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(append([]string{filepath.Dir(file), "..", ".."}, parts...)...)
}

// rig is one test's team, database, caches, simulated workload and the
// acceptance service; runners are made per test.
type rig struct {
	env     *stacktest.Env
	team    devcluster.Team
	db      *store.Store
	jobs    *kube.JobCache
	svc     *acceptance.Service
	launch  *launch.Service
	figures simworkload.Figures
	lead    acceptance.Person
}

func newRig(t *testing.T) *rig {
	t.Helper()
	env := stacktest.Stack(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Two GPUs: the run's two nodes of one GPU each.
	team := env.Team(t, stacktest.TeamSpec{Quotas: map[string]corev1.ResourceList{
		h100: {"nvidia.com/gpu": resource.MustParse("2"), "cpu": resource.MustParse("64"), "memory": resource.MustParse("512Gi")},
	}})
	waitForPolicies(t, env, team)
	db, err := store.Open(ctx, stacktest.Postgres(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	require.NoError(t, store.Migrate(ctx, db.SQL(), slog.New(slog.NewTextHandler(io.Discard, nil))))
	require.NoError(t, db.UpsertTeams(ctx, []roster.Team{{Name: team.Name, DisplayName: team.DisplayName, CostCenter: team.CostCenter,
		MemberGroups: team.MemberGroups, LeadGroups: team.LeadGroups}}))
	_, err = launch.SeedTemplates(ctx, db, repoPath("deploy", "templates"))
	require.NoError(t, err)
	_, err = cost.SeedPrices(ctx, db, repoPath("deploy", "local", "prices.yaml"))
	require.NoError(t, err)

	queues, err := kube.NewCache(env.Kueue, 0)
	require.NoError(t, err)
	jobs, err := kube.NewJobCache(env.Kube, env.Kueue, 0)
	require.NoError(t, err)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ledger := &cost.Ledger{Store: db, Workloads: jobs, Causes: queue.LedgerCauses{Jobs: jobs}, Log: log}
	cacheCtx, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	require.NoError(t, jobs.OnWorkloadChange(func(old, new *kueue.Workload) { ledger.Observe(cacheCtx, old, new) }))
	queues.Start(cacheCtx)
	jobs.Start(cacheCtx)
	require.NoError(t, queues.WaitForSync(ctx))
	require.NoError(t, jobs.WaitForSync(ctx))
	go ledger.Run(cacheCtx, time.Second)

	figures := simworkload.DefaultFigures()
	env.SimulateWorkloads(t, team.Namespace(), figures, simworkload.DefaultTimings())
	auditLog := audit.New(db, nil)
	r := &rig{
		env: env, team: team, db: db, jobs: jobs, figures: figures,
		svc:    &acceptance.Service{Store: db, Audit: auditLog},
		launch: &launch.Service{Base: env.RESTConfig, Store: db, Queues: queues, Rules: policy.Rules{Registries: []string{"nvcr.io"}}, Audit: auditLog},
		lead:   acceptance.Person{Username: "bob-" + team.Name, Groups: team.LeadGroups, Teams: []string{team.Name}, Leads: []string{team.Name}, Via: "test"},
	}
	return r
}

// runner is one replica's acceptance runner.
func (r *rig) runner(t *testing.T) *acceptance.Runner {
	t.Helper()
	m, err := gpu.New(r.env.PrometheusURL)
	require.NoError(t, err)
	return &acceptance.Runner{
		Store: r.db, Launcher: r.launch, Cluster: r.jobs, GPU: m,
		Logs: &kube.PodLogs{Base: r.env.RESTConfig, Pods: r.jobs},
		Base: r.env.RESTConfig, Audit: audit.New(r.db, nil),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), StepTimeout: 2 * time.Minute,
	}
}

// define stores the H100 pool's definition for the rig's team, with the
// thresholds the simulated figures pass, changed by tweak.
func (r *rig) define(t *testing.T, tweak func(*acceptance.Definition)) {
	t.Helper()
	d := acceptance.Definition{
		Pool: h100, Team: r.team.Name, Template: "pytorch-multinode", Image: "nvcr.io/nvidia/pytorch:24.12-py3",
		GPUs: 1, Nodes: 2, Dataset: "c4-en", Weights: "s3://models/llama-3-8b", TrainingWindowSeconds: 600, Benchmark: true,
		MaxQueueWaitSeconds: 120, MaxDataPullSeconds: 60, MinBusBandwidthGBps: 150, MaxCheckpointWriteSeconds: 60,
		MaxRecoverySeconds: 90, MinSamplesPerSecond: 2000,
		BaselineLabel: "GPU rental", BaselineUSDPerMillionSamples: 1_574_000, MinBaselineRatio: 1,
	}
	if tweak != nil {
		tweak(&d)
	}
	_, err := r.svc.SaveDefinition(t.Context(), acceptance.Person{Username: "erin", Admin: true, Via: "test"}, d)
	require.NoError(t, err)
}

// wait polls the run's report until it has finished.
func (r *rig) wait(t *testing.T, id int64) acceptance.Report {
	t.Helper()
	var rep acceptance.Report
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var err error
		rep, err = r.svc.Run(context.Background(), r.lead, id)
		require.NoError(c, err)
		assert.NotEqual(c, acceptance.StatusRunning, rep.Status, "run still at: %s", rep.Verdict)
	}, 5*time.Minute, time.Second)
	return rep
}

func (r *rig) audits(t *testing.T, action string) []store.AuditEntry {
	t.Helper()
	es, err := r.db.AuditEntries(t.Context(), store.AuditFilter{Action: action, Limit: 100})
	require.NoError(t, err)
	return es
}

func step(rep acceptance.Report, n int) acceptance.Step { return rep.Steps[n-1] }

func TestAcceptanceRunOnSimulatedH100PoolPassesAllSevenSteps(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.define(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go r.runner(t).Run(ctx, 300*time.Millisecond)

	started, err := r.svc.Start(t.Context(), r.lead, h100)
	require.NoError(t, err)
	rep := r.wait(t, started.ID)

	for _, s := range rep.Steps {
		assert.Equal(t, acceptance.StatusPassed, s.Status, "step %d %s: %s", s.Number, s.Title, s.Summary)
	}
	require.Equal(t, acceptance.StatusPassed, rep.Status, rep.Verdict)
	assert.Equal(t, "Pool h100-sxm-ib-training passed all 7 steps of its acceptance test.", rep.Verdict)
	// The figures are the ones the simulated workload wrote in its log.
	assert.Equal(t, r.figures.DataPullSeconds, *step(rep, 2).Figure)
	assert.Equal(t, r.figures.BusBandwidthGBps, *step(rep, 3).Figure)
	assert.Equal(t, r.figures.SamplesPerSecond, *step(rep, 4).Figure)
	assert.Equal(t, r.figures.CheckpointSeconds, step(rep, 5).Measures[0].Figure)
	assert.Contains(t, step(rep, 5).Summary, "checkpoint write 41.2 s, at most 60 s allowed")
	assert.Contains(t, step(rep, 5).Summary, fmt.Sprintf("resumed from step %d", r.figures.CheckpointStep))

	// Gantry really deleted a pod, as the starter, and measured recovery
	// from the deletion to the replacement's "resumed" line.
	deletions := r.audits(t, acceptance.ActionPodDelete)
	require.Len(t, deletions, 1)
	assert.Equal(t, r.lead.Username, deletions[0].Actor)
	deleted := strings.TrimPrefix(deletions[0].Target, r.team.Namespace()+"/")
	pods, err := r.env.Kube.CoreV1().Pods(r.team.Namespace()).List(t.Context(), metav1.ListOptions{LabelSelector: naming.LabelInstance + "=" + rep.Job})
	require.NoError(t, err)
	var index0 []string
	for _, p := range pods.Items {
		assert.NotEqual(t, deleted, p.Name, "the deleted pod is gone")
		if p.Annotations[batchv1.JobCompletionIndexAnnotation] == "0" {
			index0 = append(index0, p.Name)
		}
	}
	assert.Len(t, index0, 1, "a replacement pod took index 0")
	recovery := step(rep, 5).Measures[1]
	assert.Equal(t, "recovery after deleting a pod", recovery.Name)
	assert.Greater(t, recovery.Figure, simworkload.DefaultTimings().ResumeDelay.Seconds()-0.01, "recovery includes the replacement's own resume delay")
	assert.Less(t, recovery.Figure, 60.0)

	// Step 6 found the labels, the queue's Workload, the ledger row and GPU samples.
	assert.Contains(t, step(rep, 6).Summary, "4 objects and pods carry the 14 shared labels")
	assert.Contains(t, step(rep, 6).Summary, "ledger row(s) of team "+r.team.Name)
	assert.Contains(t, step(rep, 6).Summary, "GPU metrics (average utilization")
	// The run's cost is the ledger's, and step 7 compares with the baseline:
	// $4/GPU-hour × 2 GPUs / (2400 samples/s × 3600) = $0.925926 per million samples.
	rows, err := r.db.JobRuns(t.Context(), r.team.Namespace(), rep.Job)
	require.NoError(t, err)
	require.Len(t, rows, 1)
	require.NotNil(t, rep.CostUSD)
	assert.Equal(t, rows[0].CostUSD, *rep.CostUSD)
	assert.Positive(t, int64(*rep.CostUSD))
	assert.Equal(t, money.USD(925926), acceptance.CostPerMillionSamples(4*money.Dollar, 2, 2400))
	assert.Equal(t, 1.7, *rep.BaselineRatio)
	assert.Contains(t, step(rep, 7).Summary, "this pool delivers 1.7× the GPU rental baseline per dollar")

	md := rep.Markdown()
	t.Log(md)
	assert.Contains(t, md, "| 5 | Write a checkpoint, delete a pod, restore from the checkpoint | passed |")
	assert.Contains(t, md, "- Cost of the run: "+rep.Cost)
}

func TestAcceptanceThresholdTighterThanTheSimulationFailsThatStepInWords(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.define(t, func(d *acceptance.Definition) { d.MaxCheckpointWriteSeconds = 30 })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go r.runner(t).Run(ctx, 300*time.Millisecond)

	started, err := r.svc.Start(t.Context(), r.lead, h100)
	require.NoError(t, err)
	rep := r.wait(t, started.ID)

	require.Equal(t, acceptance.StatusFailed, rep.Status)
	assert.Equal(t, "Pool h100-sxm-ib-training failed step 5 of its acceptance test.", rep.Verdict)
	s5 := step(rep, 5)
	assert.Equal(t, acceptance.StatusFailed, s5.Status)
	assert.True(t, strings.HasPrefix(s5.Summary, "Failed: checkpoint write 41.2 s, at most 30 s allowed."), s5.Summary)
	for _, n := range []int{1, 2, 3, 4, 6, 7} {
		assert.Equal(t, acceptance.StatusPassed, step(rep, n).Status, "step %d: %s", n, step(rep, n).Summary)
		assert.NotNil(t, step(rep, n).Figure, "step %d reports its figure", n)
	}
}

func TestAcceptanceRunSurvivesTheLeaderDyingMidRun(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.define(t, nil)
	leaseNS := r.env.Namespace(t, "lease", nil)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	replica := func(identity string) (context.CancelFunc, *leader.Elector, chan struct{}) {
		el, err := leader.New(leader.Config{Enabled: true, Namespace: leaseNS, Name: "acceptance", Identity: identity,
			LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 500 * time.Millisecond}, r.env.Kube, log)
		require.NoError(t, err)
		loops := &leader.Loops{}
		runner := r.runner(t)
		loops.Add("acceptance-runs", func(ctx context.Context) { runner.Run(ctx, 300*time.Millisecond) })
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = el.Run(ctx, loops) }()
		t.Cleanup(func() { cancel(); <-done })
		return cancel, el, done
	}
	killA, a, aDone := replica("replica-a")
	require.Eventually(t, a.Leading, 30*time.Second, 100*time.Millisecond)
	_, b, _ := replica("replica-b")

	started, err := r.svc.Start(t.Context(), r.lead, h100)
	require.NoError(t, err)
	// Kill the leader in the middle of step 5: after it chose the pod to delete.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		row, err := r.db.AcceptanceRun(context.Background(), started.ID)
		require.NoError(c, err)
		assert.Contains(c, string(row.State), `"deletedPod"`)
	}, 3*time.Minute, 100*time.Millisecond)
	killA()
	<-aDone
	mid, err := r.svc.Run(t.Context(), r.lead, started.ID)
	require.NoError(t, err)
	require.Equal(t, acceptance.StatusRunning, mid.Status, "the run was not finished when its leader died")
	require.Eventually(t, b.Leading, 30*time.Second, 100*time.Millisecond)

	rep := r.wait(t, started.ID)
	for _, s := range rep.Steps {
		assert.Equal(t, acceptance.StatusPassed, s.Status, "step %d %s: %s", s.Number, s.Title, s.Summary)
	}
	// No step ran twice: one launch, one deleted pod, one ledger row.
	launches := 0
	for _, e := range r.audits(t, launch.ActionLaunch) {
		if e.Target == r.team.Namespace()+"/"+rep.Job {
			launches++
		}
	}
	assert.Equal(t, 1, launches)
	assert.Len(t, r.audits(t, acceptance.ActionPodDelete), 1)
	rows, err := r.db.JobRuns(t.Context(), r.team.Namespace(), rep.Job)
	require.NoError(t, err)
	assert.Len(t, rows, 1)
	assert.Len(t, r.audits(t, acceptance.ActionRunFinish), 1)
}

// waitForPolicies waits until the stack's admission policies are in force
// in the new team namespace (a dry-run Job without labels is refused).
func waitForPolicies(t *testing.T, env *stacktest.Env, team devcluster.Team) {
	t.Helper()
	job := stacktest.CompliantJob(team.Name, "probe-labels", corev1.ResourceList{"cpu": resource.MustParse("1")})
	job.Labels, job.Spec.Template.Labels = nil, nil
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		_, err := env.Kube.BatchV1().Jobs(team.Namespace()).Create(context.Background(), job, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		assert.ErrorContains(c, err, "missing labels")
	}, 30*time.Second, 200*time.Millisecond)
}

// diesAfterPodDelete is a replica killed in the one window a leader kill
// cannot aim at: its pod deletion reached the API server and the save that
// records it never happened.
type diesAfterPodDelete struct {
	*store.Store
	kill context.CancelFunc
	died chan struct{}
}

func (d *diesAfterPodDelete) UpdateAcceptanceRunAudited(ctx context.Context, row store.AcceptanceRun, e *store.AuditEntry) (store.AcceptanceRun, error) {
	if e != nil && e.Action == acceptance.ActionPodDelete {
		d.kill()
		close(d.died)
		return store.AcceptanceRun{}, context.Canceled
	}
	return d.Store.UpdateAcceptanceRunAudited(ctx, row, e)
}

func TestRunnerKilledRightAfterDeletingThePodLeavesOneRecordedDeletion(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.define(t, nil)
	started, err := r.svc.Start(t.Context(), r.lead, h100)
	require.NoError(t, err)

	ctxA, killA := context.WithCancel(context.Background())
	t.Cleanup(killA)
	a := r.runner(t)
	dying := &diesAfterPodDelete{Store: r.db, kill: killA, died: make(chan struct{})}
	a.Store = dying
	aDone := make(chan struct{})
	go func() { defer close(aDone); a.Run(ctxA, 300*time.Millisecond) }()
	select {
	case <-dying.died:
	case <-time.After(4 * time.Minute):
		t.Fatal("the first runner never deleted the pod")
	}
	<-aDone
	mid, err := r.svc.Run(t.Context(), r.lead, started.ID)
	require.NoError(t, err)
	require.Equal(t, acceptance.StatusRunning, mid.Status)

	ctxB, stopB := context.WithCancel(context.Background())
	t.Cleanup(stopB)
	go r.runner(t).Run(ctxB, 300*time.Millisecond)
	rep := r.wait(t, started.ID)
	for _, s := range rep.Steps {
		assert.Equal(t, acceptance.StatusPassed, s.Status, "step %d %s: %s", s.Number, s.Title, s.Summary)
	}
	deletions := r.audits(t, acceptance.ActionPodDelete)
	require.Len(t, deletions, 1, "the deletion is recorded once, by the runner that took over")
	assert.Equal(t, "bob-"+r.team.Name, deletions[0].Actor)
	var detail struct{ UID, Outcome string }
	require.NoError(t, json.Unmarshal(deletions[0].Detail, &detail))
	assert.NotEmpty(t, detail.UID)
	// The pod may still be terminating when the second runner asks.
	assert.Contains(t, []string{"deleted", "already gone"}, detail.Outcome)
}
