package launch_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/gantry/internal/audit"
	"github.com/gantry-dev/gantry/internal/catalog"
	"github.com/gantry-dev/gantry/internal/devcluster"
	"github.com/gantry-dev/gantry/internal/devcluster/stacktest"
	"github.com/gantry-dev/gantry/internal/kube"
	"github.com/gantry-dev/gantry/internal/launch"
	"github.com/gantry-dev/gantry/internal/naming"
	"github.com/gantry-dev/gantry/internal/policy"
	"github.com/gantry-dev/gantry/internal/problem"
	"github.com/gantry-dev/gantry/internal/queue"
	"github.com/gantry-dev/gantry/internal/roster"
	"github.com/gantry-dev/gantry/internal/store"
)

func repoPath(parts ...string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(append([]string{filepath.Dir(file), "..", ".."}, parts...)...)
}

// Registries is the image allowlist the stack starts with (config.DefaultImageRegistries).
var Registries = []string{"nvcr.io", "quay.io/jupyter", "docker.io/vllm"}

type fixture struct {
	env     *stacktest.Env
	team    devcluster.Team
	svc     *launch.Service
	db      *store.Store
	jobs    *kube.JobCache
	alice   launch.Actor
	outside launch.Actor
}

func setup(t *testing.T) fixture {
	t.Helper()
	env := stacktest.Stack(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	team := env.Team(t, stacktest.TeamSpec{Quotas: map[string]corev1.ResourceList{
		"h100-sxm-ib-training": {"nvidia.com/gpu": resource.MustParse("2"), "cpu": resource.MustParse("64"), "memory": resource.MustParse("512Gi")},
		"l40s-pcie-inference":  {"nvidia.com/gpu": resource.MustParse("2"), "cpu": resource.MustParse("16"), "memory": resource.MustParse("128Gi")},
		"a100-mig-shared":      {"nvidia.com/mig-1g.10gb": resource.MustParse("2"), "cpu": resource.MustParse("16"), "memory": resource.MustParse("64Gi")},
	}})
	waitForPolicies(t, env, team.Namespace())

	db, err := store.Open(ctx, stacktest.Postgres(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	require.NoError(t, store.Migrate(ctx, db.SQL(), slog.New(slog.NewTextHandler(io.Discard, nil))))
	require.NoError(t, db.UpsertTeams(ctx, []roster.Team{{Name: team.Name, DisplayName: team.DisplayName, CostCenter: team.CostCenter,
		MemberGroups: team.MemberGroups, LeadGroups: team.LeadGroups}}))
	_, err = launch.SeedTemplates(ctx, db, repoPath("deploy", "templates"))
	require.NoError(t, err)

	queues, err := kube.NewCache(env.Kueue, 0)
	require.NoError(t, err)
	jobs, err := kube.NewJobCache(env.Kube, env.Kueue, 0)
	require.NoError(t, err)
	cacheCtx, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	queues.Start(cacheCtx)
	jobs.Start(cacheCtx)
	require.NoError(t, queues.WaitForSync(ctx))
	require.NoError(t, jobs.WaitForSync(ctx))

	return fixture{
		env: env, team: team, db: db, jobs: jobs,
		svc:     &launch.Service{Base: env.RESTConfig, Store: db, Queues: queues, Rules: policy.Rules{Registries: Registries}, Audit: audit.New(db, nil)},
		alice:   launch.Actor{Username: "alice", Groups: []string{team.Name + "-researchers"}, Via: "test"},
		outside: launch.Actor{Username: "mallory", Groups: []string{"someone-else"}, Via: "test"},
	}
}

// waitForPolicies waits until the admission policies the stack applied
// from deploy/policies at bootstrap are in force in the test's new
// namespace: the API server matches bindings to namespaces through its own
// informer, so a namespace made moments ago may not be covered yet. Each
// probe is a dry run only one policy objects to.
func waitForPolicies(t *testing.T, env *stacktest.Env, namespace string) {
	t.Helper()
	ctx := context.Background()
	team := strings.TrimPrefix(namespace, "team-")
	labelled := func(name string, spec func(*corev1.PodSpec)) *batchv1.Job {
		job := stacktest.CompliantJob(team, name, corev1.ResourceList{"cpu": resource.MustParse("1")})
		spec(&job.Spec.Template.Spec)
		return job
	}
	// Without pod template labels too: a Job without labels is defaulted to its template's.
	unlabelled := labelled("probe-labels", func(*corev1.PodSpec) {})
	unlabelled.Labels, unlabelled.Spec.Template.Labels = nil, nil
	probes := map[string]*batchv1.Job{
		"missing labels":                            unlabelled,
		"may not share the node's network":          labelled("probe-pods", func(s *corev1.PodSpec) { s.HostNetwork = true }),
		"Images must come from an allowed registry": labelled("probe-image", func(s *corev1.PodSpec) { s.Containers[0].Image = "registry.invalid/probe:1" }),
	}
	for want, probe := range probes {
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			_, err := env.Kube.BatchV1().Jobs(namespace).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			assert.ErrorContains(c, err, want)
		}, 30*time.Second, 200*time.Millisecond, "admission policy not in force in %s: %s", namespace, want)
	}
}

func TestEachSeededTemplateRunsOnItsPool(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	cases := map[string]struct {
		template string
		values   map[string]string
		kind     catalog.Kind
		pool     string
		pods     int
	}{
		"notebook on a MIG slice": {"jupyter-pytorch", nil, catalog.KindNotebook, "a100-mig-shared", 1},
		"single-node training":    {"pytorch-train", map[string]string{"gpus": "1", "cpu": "4", "memory": "16Gi"}, catalog.KindTraining, "h100-sxm-ib-training", 1},
		"multi-node training":     {"pytorch-multinode", map[string]string{"gpus": "1", "nodes": "2", "cpu": "4", "memory": "16Gi"}, catalog.KindTraining, "h100-sxm-ib-training", 2},
		"inference endpoint":      {"vllm-inference", map[string]string{"replicas": "1", "cpu": "2", "memory": "16Gi"}, catalog.KindInference, "l40s-pcie-inference", 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			res, err := f.svc.Launch(ctx, f.alice, launch.Request{Team: f.team.Name, Template: tc.template, Values: tc.values, LaunchID: launch.NewLaunchID()})
			require.NoError(t, err)
			assert.Equal(t, tc.kind, res.Kind)
			var st launch.Status
			require.Eventually(t, func() bool {
				st, err = launch.StatusOf(f.jobs, res.Namespace, res.Name, tc.kind)
				return err == nil && st.Phase == queue.PhaseRunning
			}, 90*time.Second, 250*time.Millisecond, "never running: last status %+v, err %v", st, err)
			pods, err := f.env.Kube.CoreV1().Pods(res.Namespace).List(ctx, metav1.ListOptions{LabelSelector: naming.LabelInstance + "=" + res.Name})
			require.NoError(t, err)
			running := 0
			for _, p := range pods.Items {
				if p.Spec.NodeName == "" {
					continue
				}
				node, err := f.env.Kube.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
				require.NoError(t, err)
				assert.Equal(t, tc.pool, node.Labels["gantry.dev/pool"], "pool of the node running %s", p.Name)
				assert.Equal(t, "alice", p.Labels[naming.LabelOwner])
				running++
			}
			assert.GreaterOrEqual(t, running, 1)
			require.NoError(t, f.svc.Delete(ctx, f.alice, f.team.Name, res.Name))
		})
	}
}

func TestOverBoundRequestIsRefusedWithASentence(t *testing.T) {
	f := setup(t)
	_, err := f.svc.Launch(context.Background(), f.alice, launch.Request{Team: f.team.Name, Template: "pytorch-train",
		Values: map[string]string{"gpus": "8"}, LaunchID: launch.NewLaunchID()})
	var fe problem.Fields
	require.ErrorAs(t, err, &fe)
	// Nominal 2 plus a borrowing limit of 2 (the stack lets a team borrow its nominal quota again).
	assert.Equal(t, "This asks for 8 GPUs on the h100-sxm-ib-training pool in total, but your team can use at most 4 there, even borrowing from other teams. Ask for less, or ask your team lead for more quota.", fe[naming.FieldGPUs])
}

func TestOutsiderIsForbiddenByTheAPIServer(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	id := launch.NewLaunchID()
	_, err := f.svc.Launch(ctx, f.outside, launch.Request{Team: f.team.Name, Template: "pytorch-train",
		Values: map[string]string{"gpus": "1", "memory": "16Gi"}, LaunchID: id})
	var forbidden *launch.ForbiddenError
	require.ErrorAs(t, err, &forbidden)
	assert.True(t, apierrors.IsForbidden(errors.Unwrap(err)), "the refusal comes from the API server: %v", err)
	assert.Equal(t, "Kubernetes refused: you are not a member of team "+f.team.Name+", so you cannot do this in its namespace.", err.Error())
	_, err = f.db.LaunchByID(ctx, id)
	assert.ErrorIs(t, err, store.ErrNotFound)
}

func TestDoubleSubmitMakesOneWorkload(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	req := launch.Request{Team: f.team.Name, Template: "pytorch-train", Values: map[string]string{"gpus": "1", "memory": "16Gi"}, LaunchID: launch.NewLaunchID()}
	results := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := f.svc.Launch(ctx, f.alice, req)
			results <- err
		}()
	}
	require.NoError(t, <-results)
	require.NoError(t, <-results)
	again, err := f.svc.Launch(ctx, f.alice, req)
	require.NoError(t, err)
	assert.True(t, again.Existing)
	jobs, err := f.env.Kube.BatchV1().Jobs(f.team.Namespace()).List(ctx, metav1.ListOptions{LabelSelector: naming.LabelLaunchID + "=" + req.LaunchID})
	require.NoError(t, err)
	assert.Len(t, jobs.Items, 1)
}

func TestFailureMidwayLeavesNothing(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	id := launch.NewLaunchID()
	name := naming.Object("vllm-inference", id)
	// Another launch's Deployment already holds the name this launch's
	// second object (after its Service) needs.
	tpl, err := f.svc.Template(ctx, "vllm-inference", 0)
	require.NoError(t, err)
	v, errs := tpl.ParseValues(map[string]string{"cpu": "2", "memory": "16Gi"})
	require.Empty(t, errs)
	other, err := catalog.Render(&tpl, catalog.Target{Team: f.team.Name, Namespace: f.team.Namespace(), Owner: "bob", LaunchID: "squatter00", Queue: "default", CostCenter: "x"}, v)
	require.NoError(t, err)
	squat := other.Workload.(*appsv1.Deployment).DeepCopy()
	squat.Name = name
	_, err = f.env.Kube.AppsV1().Deployments(f.team.Namespace()).Create(ctx, squat, metav1.CreateOptions{})
	require.NoError(t, err)

	_, err = f.svc.Launch(ctx, f.alice, launch.Request{Team: f.team.Name, Template: "vllm-inference", Values: map[string]string{"cpu": "2", "memory": "16Gi"}, LaunchID: id})
	var collision *launch.CollisionError
	require.ErrorAs(t, err, &collision)
	_, err = f.env.Kube.CoreV1().Services(f.team.Namespace()).Get(ctx, name, metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "the Service created first must be deleted again, got %v", err)
	_, err = f.db.LaunchByID(ctx, id)
	assert.ErrorIs(t, err, store.ErrNotFound)
}

func TestAdmissionPoliciesRejectDirectWrites(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	ns := f.team.Namespace()
	podSpec := func() corev1.PodSpec {
		return corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "nvcr.io/nvidia/pytorch:24.12-py3",
			SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: new(false), RunAsNonRoot: new(true),
				Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}, SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}}}}
	}
	privileged := podSpec()
	privileged.Containers[0].SecurityContext.Privileged = new(true)
	privileged.Containers[0].SecurityContext.AllowPrivilegeEscalation = new(true)
	offList := podSpec()
	offList.Containers[0].Image = "docker.io/library/ubuntu:latest"

	cases := map[string]struct {
		create  func() error
		wantMsg string
	}{
		"unlabelled Job": {
			create: func() error {
				_, err := f.env.Kube.BatchV1().Jobs(ns).Create(ctx, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "unlabelled"},
					Spec: batchv1.JobSpec{Suspend: new(true), Template: corev1.PodTemplateSpec{Spec: podSpec()}}}, metav1.CreateOptions{})
				return err
			},
			wantMsg: "This Job is missing labels every workload in a team namespace needs",
		},
		// Pod Security admission (restricted) runs before the policies and already refuses it.
		"privileged pod": {
			create: func() error {
				_, err := f.env.Kube.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "privileged"}, Spec: privileged}, metav1.CreateOptions{})
				return err
			},
			wantMsg: "must not set securityContext.privileged=true",
		},
		// Pod Security only warns about a Job's pod template; the policy refuses the Job itself.
		"labelled Job with a privileged pod template": {
			create: func() error {
				job := labelledJob(t, f, "privileged-job")
				job.Spec.Template.Spec.Containers[0].SecurityContext.Privileged = new(true)
				job.Spec.Template.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = nil // the API refuses privileged without escalation
				_, err := f.env.Kube.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{})
				return err
			},
			wantMsg: "Containers in team namespaces may not run privileged: trainer",
		},
		"labelled Job with hostPath": {
			create: func() error {
				job := labelledJob(t, f, "hostpath-job")
				job.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
				_, err := f.env.Kube.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{})
				return err
			},
			wantMsg: "Pods in team namespaces may not mount directories of the node (hostPath volumes).",
		},
		"pod with an image off the allowlist": {
			create: func() error {
				_, err := f.env.Kube.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "offlist"}, Spec: offList}, metav1.CreateOptions{})
				return err
			},
			wantMsg: "Images must come from an allowed registry",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := tc.create()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantMsg)
		})
	}
}

// labelledJob is a policy-clean Job rendered from the training template.
func labelledJob(t *testing.T, f fixture, name string) *batchv1.Job {
	t.Helper()
	tpl, err := f.svc.Template(context.Background(), "pytorch-train", 0)
	require.NoError(t, err)
	v, errs := tpl.ParseValues(map[string]string{"memory": "16Gi"})
	require.Empty(t, errs)
	out, err := catalog.Render(&tpl, catalog.Target{Team: f.team.Name, Namespace: f.team.Namespace(), Owner: "admin", LaunchID: launch.NewLaunchID(), Queue: "default", CostCenter: "x"}, v)
	require.NoError(t, err)
	job := out.Workload.(*batchv1.Job).DeepCopy()
	job.Name = name
	return job
}

func TestEndpointScalesWithinItsRangeAndNotebookStopKeepsItsObjects(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	ep, err := f.svc.Launch(ctx, f.alice, launch.Request{Team: f.team.Name, Template: "vllm-inference",
		Values: map[string]string{"cpu": "2", "memory": "16Gi"}, LaunchID: launch.NewLaunchID()})
	require.NoError(t, err)

	var scaleErr *launch.ScaleError
	require.ErrorAs(t, f.svc.Scale(ctx, f.alice, f.team.Name, ep.Name, 9), &scaleErr)
	assert.Equal(t, "This endpoint can run 1 to 4 replicas; you asked for 9.", scaleErr.Error())
	require.NoError(t, f.svc.Scale(ctx, f.alice, f.team.Name, ep.Name, 2))
	dep, err := f.env.Kube.AppsV1().Deployments(ep.Namespace).Get(ctx, ep.Name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(2), *dep.Spec.Replicas)

	nb, err := f.svc.Launch(ctx, f.alice, launch.Request{Team: f.team.Name, Template: "jupyter-pytorch", LaunchID: launch.NewLaunchID()})
	require.NoError(t, err)
	require.NoError(t, f.svc.Stop(ctx, f.alice, f.team.Name, nb.Name))
	require.Eventually(t, func() bool {
		st, err := launch.StatusOf(f.jobs, nb.Namespace, nb.Name, catalog.KindNotebook)
		return err == nil && st.Phase == queue.PhaseStopped && len(st.Pods) == 0
	}, time.Minute, 250*time.Millisecond)
	_, err = f.env.Kube.CoreV1().Services(nb.Namespace).Get(ctx, nb.Name, metav1.GetOptions{})
	assert.NoError(t, err, "a stopped notebook keeps its Service (and StatefulSet, with any workspace claim)")
	require.ErrorIs(t, f.svc.Scale(ctx, f.alice, f.team.Name, nb.Name, 2), launch.ErrNotSupported)
	require.NoError(t, f.svc.Resume(ctx, f.alice, f.team.Name, nb.Name))
	require.Eventually(t, func() bool {
		st, err := launch.StatusOf(f.jobs, nb.Namespace, nb.Name, catalog.KindNotebook)
		return err == nil && st.Phase == queue.PhaseRunning
	}, time.Minute, 250*time.Millisecond)

	entries, err := f.db.AuditEntries(ctx, store.AuditFilter{Actor: "alice"})
	require.NoError(t, err)
	var actions []string
	for _, e := range entries {
		actions = append(actions, e.Action+" "+e.Target)
	}
	for _, want := range []string{
		launch.ActionLaunch + " " + ep.Namespace + "/" + ep.Name,
		launch.ActionScale + " " + ep.Namespace + "/" + ep.Name,
		launch.ActionStop + " " + nb.Namespace + "/" + nb.Name,
		launch.ActionResume + " " + nb.Namespace + "/" + nb.Name,
	} {
		assert.Contains(t, actions, want)
	}
}
