package devcluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/gantry-dev/gantry/internal/catalog"
	"github.com/gantry-dev/gantry/internal/devcluster/stacktest"
	"github.com/gantry-dev/gantry/internal/naming"
)

// Pools of deploy/local/pools.yaml the tests rely on.
const (
	trainingPool  = "h100-sxm-ib-training"
	inferencePool = "l40s-pcie-inference"
	migPool       = "a100-mig-shared"
	cpuPool       = "cpu-general"

	queueLabel    = "kueue.x-k8s.io/queue-name"
	priorityLabel = "kueue.x-k8s.io/priority-class"
	gpu           = corev1.ResourceName("nvidia.com/gpu")
	mig1g         = corev1.ResourceName("nvidia.com/mig-1g.10gb")
)

func quota(kv ...string) corev1.ResourceList {
	rl := corev1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		rl[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return rl
}

// jobBuilder makes queued test Jobs that the team namespace's admission
// policies accept: jobBuilder{...}.obj().
type jobBuilder struct {
	name, namespace, priority string
	// owner is the gantry.dev/owner label; a person may create only jobs
	// they own (deploy/policies/workload-labels.yaml).
	owner       string
	requests    corev1.ResourceList
	annotations map[string]string
	parallelism int32
}

func (b jobBuilder) obj() *batchv1.Job {
	// Team namespaces are team-<name>.
	job := stacktest.CompliantJob(strings.TrimPrefix(b.namespace, "team-"), b.name, b.requests)
	if b.priority != "" {
		job.Labels[priorityLabel] = b.priority
		job.Spec.Template.Labels[priorityLabel] = b.priority
	}
	if b.owner != "" {
		job.Labels[naming.LabelOwner] = b.owner
		job.Spec.Template.Labels[naming.LabelOwner] = b.owner
	}
	par := b.parallelism
	if par == 0 {
		par = 1
	}
	job.Spec.Parallelism = ptr.To(par)
	job.Spec.Completions = ptr.To(par)
	job.Spec.Template.Annotations = b.annotations
	return job
}

func createJob(t *testing.T, env *stacktest.Env, b jobBuilder) *batchv1.Job {
	t.Helper()
	job, err := env.Kube.BatchV1().Jobs(b.namespace).Create(context.Background(), b.obj(), metav1.CreateOptions{})
	require.NoError(t, err, "create job %s", b.name)
	return job
}

// workloadOf returns the Kueue Workload of an object (owner UID).
func workloadOf(ctx context.Context, env *stacktest.Env, namespace string, owner metav1.Object) (*kueue.Workload, error) {
	list, err := env.Kueue.KueueV1beta2().Workloads(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for i := range list.Items {
		for _, ref := range list.Items[i].OwnerReferences {
			if ref.UID == owner.GetUID() {
				return &list.Items[i], nil
			}
		}
	}
	return nil, fmt.Errorf("no workload owned by %s yet", owner.GetName())
}

func admitted(wl *kueue.Workload) bool {
	return meta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadAdmitted)
}

func podsOf(ctx context.Context, kube kubernetes.Interface, namespace, selector string) ([]corev1.Pod, error) {
	list, err := kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// requireRunningOnPool waits until the selected pods run and checks that
// their nodes belong to the pool.
func requireRunningOnPool(t *testing.T, env *stacktest.Env, namespace, selector, pool string, n int) []corev1.Pod {
	t.Helper()
	ctx := context.Background()
	var pods []corev1.Pod
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var err error
		pods, err = podsOf(ctx, env.Kube, namespace, selector)
		require.NoError(c, err)
		require.Len(c, pods, n)
		for _, p := range pods {
			assert.Equal(c, corev1.PodRunning, p.Status.Phase, "pod %s", p.Name)
		}
	}, 60*time.Second, 250*time.Millisecond, "pods %s in %s running", selector, namespace)
	for _, p := range pods {
		node, err := env.Kube.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, pool, node.Labels[naming.LabelPool], "pool of node %s running %s", node.Name, p.Name)
	}
	return pods
}

func TestSuspendedJobIsAdmittedAndRunsOnItsPool(t *testing.T) {
	env := stacktest.Stack(t)
	team := env.Team(t, stacktest.TeamSpec{Quotas: map[string]corev1.ResourceList{
		cpuPool:      quota("cpu", "8", "memory", "32Gi"),
		trainingPool: quota("nvidia.com/gpu", "8", "cpu", "32", "memory", "256Gi"),
	}})
	ns := team.Namespace()
	ctx := context.Background()

	job := createJob(t, env, jobBuilder{name: "train", namespace: ns, parallelism: 2,
		requests:    quota("nvidia.com/gpu", "2", "cpu", "4", "memory", "16Gi"),
		annotations: map[string]string{"gantry.dev/simulate-duration": "3s"}})

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		wl, err := workloadOf(ctx, env, ns, job)
		require.NoError(c, err)
		assert.True(c, admitted(wl), "workload %s admitted", wl.Name)
		j, err := env.Kube.BatchV1().Jobs(ns).Get(ctx, job.Name, metav1.GetOptions{})
		require.NoError(c, err)
		assert.False(c, ptr.Deref(j.Spec.Suspend, true), "job unsuspended")
	}, 30*time.Second, 250*time.Millisecond)

	pods := requireRunningOnPool(t, env, ns, "batch.kubernetes.io/job-name="+job.Name, trainingPool, 2)
	for _, p := range pods {
		assert.Contains(t, p.Spec.Tolerations, corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpEqual,
			Value: "present", Effect: corev1.TaintEffectNoSchedule}, "flavor toleration on %s", p.Name)
	}

	// kwok finishes the pods after the simulated duration.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		j, err := env.Kube.BatchV1().Jobs(ns).Get(ctx, job.Name, metav1.GetOptions{})
		require.NoError(c, err)
		assert.Equal(c, int32(2), j.Status.Succeeded)
	}, 60*time.Second, 250*time.Millisecond, "job completes after its simulated duration")
}

func TestJobPodFailsWithRequestedExitCode(t *testing.T) {
	env := stacktest.Stack(t)
	team := env.Team(t, stacktest.TeamSpec{Quotas: map[string]corev1.ResourceList{
		cpuPool: quota("cpu", "8", "memory", "32Gi"),
	}})
	ns := team.Namespace()
	ctx := context.Background()
	job := createJob(t, env, jobBuilder{name: "oom", namespace: ns, requests: quota("cpu", "1", "memory", "1Gi"),
		annotations: map[string]string{
			"gantry.dev/simulate-duration":  "2s",
			"gantry.dev/simulate-exit-code": "137",
			"gantry.dev/simulate-reason":    "OOMKilled",
		}})
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		pods, err := podsOf(ctx, env.Kube, ns, "batch.kubernetes.io/job-name="+job.Name)
		require.NoError(c, err)
		require.NotEmpty(c, pods)
		p := pods[0]
		require.Equal(c, corev1.PodFailed, p.Status.Phase)
		require.Len(c, p.Status.ContainerStatuses, 1)
		term := p.Status.ContainerStatuses[0].State.Terminated
		require.NotNil(c, term)
		assert.Equal(c, int32(137), term.ExitCode)
		assert.Equal(c, "OOMKilled", term.Reason)
	}, 60*time.Second, 250*time.Millisecond, "pod fails with exit code 137 (OOMKilled)")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		j, err := env.Kube.BatchV1().Jobs(ns).Get(ctx, job.Name, metav1.GetOptions{})
		require.NoError(c, err)
		assert.True(c, jobCondition(j, batchv1.JobFailed), "job failed")
	}, 30*time.Second, 250*time.Millisecond)
}

func jobCondition(j *batchv1.Job, typ batchv1.JobConditionType) bool {
	for _, c := range j.Status.Conditions {
		if c.Type == typ && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func TestJobOverQuotaStaysPendingWithKueueReason(t *testing.T) {
	env := stacktest.Stack(t)
	team := env.Team(t, stacktest.TeamSpec{Quotas: map[string]corev1.ResourceList{
		trainingPool: quota("nvidia.com/gpu", "2", "cpu", "16", "memory", "64Gi"),
	}})
	ns := team.Namespace()
	ctx := context.Background()
	// Nominal 2 + borrowing limit 2, and a cohort of its own: 8 never fits.
	job := createJob(t, env, jobBuilder{name: "too-big", namespace: ns, requests: quota("nvidia.com/gpu", "8", "cpu", "4", "memory", "16Gi")})

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		wl, err := workloadOf(ctx, env, ns, job)
		require.NoError(c, err)
		cond := meta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadQuotaReserved)
		require.NotNil(c, cond, "QuotaReserved condition")
		assert.Equal(c, metav1.ConditionFalse, cond.Status)
		assert.Equal(c, "Pending", cond.Reason)
		// e.g. "couldn't assign flavors to pod set main: insufficient quota
		// for nvidia.com/gpu in flavor h100-sxm-ib-training, … > maximum capacity (2)"
		assert.Contains(c, cond.Message, "insufficient")
		assert.Contains(c, cond.Message, "quota for nvidia.com/gpu in flavor "+trainingPool)
	}, 30*time.Second, 250*time.Millisecond)

	j, err := env.Kube.BatchV1().Jobs(ns).Get(ctx, job.Name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.True(t, ptr.Deref(j.Spec.Suspend, false), "job stays suspended")
	pods, err := podsOf(ctx, env.Kube, ns, "batch.kubernetes.io/job-name="+job.Name)
	require.NoError(t, err)
	assert.Empty(t, pods)
}

func TestCohortBorrowingIsReclaimedByPreemption(t *testing.T) {
	env := stacktest.Stack(t)
	cohort := "borrow-" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	spec := stacktest.TeamSpec{Cohort: cohort, Quotas: map[string]corev1.ResourceList{
		trainingPool: quota("nvidia.com/gpu", "2", "cpu", "16", "memory", "64Gi"),
	}}
	borrower, lender := env.Team(t, spec), env.Team(t, spec)
	ctx := context.Background()

	// 4 GPUs: 2 of the borrower's own and 2 of the lender's idle quota.
	big := createJob(t, env, jobBuilder{name: "borrows", namespace: borrower.Namespace(), priority: "batch",
		requests:    quota("nvidia.com/gpu", "4", "cpu", "4", "memory", "16Gi"),
		annotations: map[string]string{"gantry.dev/simulate-duration": "10m"}})
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		wl, err := workloadOf(ctx, env, borrower.Namespace(), big)
		require.NoError(c, err)
		require.True(c, admitted(wl), "borrowing workload admitted")
		cq, err := env.Kueue.KueueV1beta2().ClusterQueues().Get(ctx, borrower.ClusterQueue(), metav1.GetOptions{})
		require.NoError(c, err)
		borrowed := resource.Quantity{}
		for _, fu := range cq.Status.FlavorsUsage {
			for _, r := range fu.Resources {
				if r.Name == gpu {
					borrowed.Add(r.Borrowed)
				}
			}
		}
		assert.Equal(c, int64(2), borrowed.Value(), "GPUs borrowed from the cohort")
	}, 30*time.Second, 250*time.Millisecond)
	requireRunningOnPool(t, env, borrower.Namespace(), "batch.kubernetes.io/job-name="+big.Name, trainingPool, 1)

	// The lender wants its quota back.
	own := createJob(t, env, jobBuilder{name: "reclaims", namespace: lender.Namespace(), priority: "batch",
		requests:    quota("nvidia.com/gpu", "2", "cpu", "4", "memory", "16Gi"),
		annotations: map[string]string{"gantry.dev/simulate-duration": "10m"}})
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		wl, err := workloadOf(ctx, env, lender.Namespace(), own)
		require.NoError(c, err)
		assert.True(c, admitted(wl), "lender's workload admitted")
		bwl, err := workloadOf(ctx, env, borrower.Namespace(), big)
		require.NoError(c, err)
		preempted := meta.FindStatusCondition(bwl.Status.Conditions, kueue.WorkloadPreempted)
		require.NotNil(c, preempted, "borrower preempted")
		assert.Equal(c, metav1.ConditionTrue, preempted.Status)
		assert.Equal(c, kueue.InCohortReclamationReason, preempted.Reason)
	}, 60*time.Second, 250*time.Millisecond)
	requireRunningOnPool(t, env, lender.Namespace(), "batch.kubernetes.io/job-name="+own.Name, trainingPool, 1)
}

func TestStatefulSetAndDeploymentAreAdmittedThroughWebhooks(t *testing.T) {
	env := stacktest.Stack(t)
	team := env.Team(t, stacktest.TeamSpec{Quotas: map[string]corev1.ResourceList{
		inferencePool: quota("nvidia.com/gpu", "4", "cpu", "32", "memory", "128Gi"),
	}})
	ns := team.Namespace()
	ctx := context.Background()
	requests := quota("nvidia.com/gpu", "1", "cpu", "2", "memory", "8Gi")
	template := func(app string, kind catalog.Kind) corev1.PodTemplateSpec {
		spec := stacktest.RestrictedPodSpec(requests)
		spec.RestartPolicy = corev1.RestartPolicyAlways
		labels := stacktest.WorkloadLabels(team.Name, app, kind)
		labels["app"] = app
		return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec}
	}

	_, err := env.Kube.AppsV1().StatefulSets(ns).Create(ctx, &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "notebook", Labels: stacktest.WorkloadLabels(team.Name, "notebook", catalog.KindNotebook)},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "notebook"}},
			Template: template("notebook", catalog.KindNotebook),
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = env.Kube.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "endpoint", Labels: stacktest.WorkloadLabels(team.Name, "endpoint", catalog.KindInference)},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "endpoint"}},
			Template: template("endpoint", catalog.KindInference),
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	// Kueue's webhooks take the pods over (the queue label comes from the
	// pod template, which policy requires) and gate them until their
	// workloads are admitted.
	for _, app := range []string{"notebook", "endpoint"} {
		n := 1
		if app == "endpoint" {
			n = 2
		}
		pods := requireRunningOnPool(t, env, ns, "app="+app, inferencePool, n)
		for _, p := range pods {
			assert.Equal(t, naming.LocalQueue, p.Labels[queueLabel], "queue label on %s", p.Name)
			assert.Equal(t, "true", p.Labels["kueue.x-k8s.io/managed"], "Kueue's pod webhook manages %s", p.Name)
			assert.Empty(t, p.Spec.SchedulingGates, "admission gate lifted on %s", p.Name)
		}
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		list, err := env.Kueue.KueueV1beta2().Workloads(ns).List(ctx, metav1.ListOptions{})
		require.NoError(c, err)
		assert.Len(c, list.Items, 3, "one workload per pod")
		for _, wl := range list.Items {
			assert.True(c, admitted(&wl), "workload %s admitted", wl.Name)
		}
	}, 30*time.Second, 250*time.Millisecond)

}

func TestVisibilityAPIReturnsPendingPositions(t *testing.T) {
	env := stacktest.Stack(t)
	team := env.Team(t, stacktest.TeamSpec{Quotas: map[string]corev1.ResourceList{
		cpuPool: quota("cpu", "2", "memory", "8Gi"),
	}})
	ns := team.Namespace()
	ctx := context.Background()
	long := map[string]string{"gantry.dev/simulate-duration": "10m"}
	// The running job has the highest priority so nothing preempts it; the
	// waiting ones are ordered by priority, then by creation.
	running := createJob(t, env, jobBuilder{name: "first", namespace: ns, priority: "inference",
		requests: quota("cpu", "2", "memory", "1Gi"), annotations: long})
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		wl, err := workloadOf(ctx, env, ns, running)
		require.NoError(c, err)
		assert.True(c, admitted(wl))
	}, 30*time.Second, 250*time.Millisecond)
	batch := createJob(t, env, jobBuilder{name: "batch", namespace: ns, priority: "batch",
		requests: quota("cpu", "2", "memory", "1Gi"), annotations: long})
	training := createJob(t, env, jobBuilder{name: "training", namespace: ns, priority: "training",
		requests: quota("cpu", "2", "memory", "1Gi"), annotations: long})
	waiting := []*batchv1.Job{training, batch}

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		summary, err := env.Kueue.VisibilityV1beta2().ClusterQueues().GetPendingWorkloadsSummary(ctx, team.ClusterQueue(), metav1.GetOptions{})
		require.NoError(c, err)
		require.Len(c, summary.Items, 2)
		for i, job := range waiting {
			wl, err := workloadOf(ctx, env, ns, job)
			require.NoError(c, err)
			assert.Equal(c, wl.Name, summary.Items[i].Name)
			assert.Equal(c, int32(i), summary.Items[i].PositionInClusterQueue)
			assert.Equal(c, int32(i), summary.Items[i].PositionInLocalQueue)
			assert.Equal(c, kueue.LocalQueueName(naming.LocalQueue), summary.Items[i].LocalQueueName)
		}
		local, err := env.Kueue.VisibilityV1beta2().LocalQueues(ns).GetPendingWorkloadsSummary(ctx, naming.LocalQueue, metav1.GetOptions{})
		require.NoError(c, err)
		assert.Len(c, local.Items, 2)
	}, 30*time.Second, 250*time.Millisecond)
}

func TestMIGSliceRequestLandsOnMIGPool(t *testing.T) {
	env := stacktest.Stack(t)
	team := env.Team(t, stacktest.TeamSpec{Quotas: map[string]corev1.ResourceList{
		trainingPool: quota("nvidia.com/gpu", "8", "cpu", "32", "memory", "128Gi"),
		migPool:      quota("nvidia.com/mig-1g.10gb", "2", "cpu", "8", "memory", "32Gi"),
	}})
	ns := team.Namespace()
	ctx := context.Background()
	job := createJob(t, env, jobBuilder{name: "slice", namespace: ns, requests: quota(string(mig1g), "1", "cpu", "1", "memory", "4Gi"),
		annotations: map[string]string{"gantry.dev/simulate-duration": "10m"}})
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		wl, err := workloadOf(ctx, env, ns, job)
		require.NoError(c, err)
		require.True(c, admitted(wl))
		require.Len(c, wl.Status.Admission.PodSetAssignments, 1)
		assert.Equal(c, kueue.ResourceFlavorReference(migPool), wl.Status.Admission.PodSetAssignments[0].Flavors[mig1g])
	}, 30*time.Second, 250*time.Millisecond)
	requireRunningOnPool(t, env, ns, "batch.kubernetes.io/job-name="+job.Name, migPool, 1)
}

func TestPrivilegedPodInTeamNamespaceIsRejectedByPodSecurity(t *testing.T) {
	env := stacktest.Stack(t)
	ctx := context.Background()
	privileged := stacktest.RestrictedPodSpec(quota("cpu", "1"))
	privileged.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
	cases := map[string]struct {
		spec    corev1.PodSpec
		wantErr []string
	}{
		// Pod Security runs before the admission policies and refuses first.
		"privileged": {spec: privileged, wantErr: []string{`violates PodSecurity "restricted:latest"`,
			`container "main" must not set securityContext.privileged=true`}},
		"restricted-compliant": {spec: stacktest.RestrictedPodSpec(quota("cpu", "1"))},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			// The real team namespace from teams.yaml; a dry run is
			// admitted (or rejected) exactly like a real create.
			_, err := env.Kube.CoreV1().Pods("team-vision").Create(ctx, &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "psa-" + name},
				Spec:       tc.spec,
			}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if len(tc.wantErr) == 0 {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.True(t, apierrors.IsForbidden(err), "forbidden, got %v", err)
			for _, want := range tc.wantErr {
				assert.Contains(t, err.Error(), want)
			}
		})
	}
}

// TestAdmissionPoliciesRefuseNonCompliantWorkloads shows deploy/policies
// in force where bootstrap put them: an admin's kubectl-style create in a
// team namespace is refused in the policy's words.
func TestAdmissionPoliciesRefuseNonCompliantWorkloads(t *testing.T) {
	env := stacktest.Stack(t)
	ctx := context.Background()
	requests := quota("cpu", "1", "memory", "1Gi")
	job := func(mutate func(*batchv1.Job)) *batchv1.Job {
		j := stacktest.CompliantJob("vision", "policy-check", requests)
		mutate(j)
		return j
	}
	cases := map[string]struct {
		job        *batchv1.Job
		wantReason metav1.StatusReason
		wantErr    string
	}{
		"compliant": {job: job(func(*batchv1.Job) {})},
		"unlabelled": {
			job: job(func(j *batchv1.Job) {
				j.Labels = nil
				j.Spec.Template.Labels = nil
			}),
			wantReason: metav1.StatusReasonInvalid,
			// Kueue's webhook defaults the queue name to the namespace's
			// "default" LocalQueue, so that one is never missing.
			wantErr: "This Job is missing labels every workload in a team namespace needs (launch it from Gantry, or add them): " +
				"gantry.dev/team, gantry.dev/owner, gantry.dev/template, gantry.dev/template-version, gantry.dev/kind, gantry.dev/pool, " +
				"gantry.dev/cost-center, kueue.x-k8s.io/priority-class, app.kubernetes.io/managed-by, " +
				"app.kubernetes.io/name, app.kubernetes.io/instance, app.kubernetes.io/component, app.kubernetes.io/part-of",
		},
		"labelled for another team": {
			job:        job(func(j *batchv1.Job) { j.Labels[naming.LabelTeam] = "nlp" }),
			wantReason: metav1.StatusReasonInvalid,
			wantErr:    "This Job is labelled for team nlp but namespace team-vision belongs to team vision.",
		},
		"image off the allowlist": {
			job:        job(func(j *batchv1.Job) { j.Spec.Template.Spec.Containers[0].Image = "docker.io/library/busybox:1.37" }),
			wantReason: metav1.StatusReasonForbidden,
			wantErr: "Images must come from an allowed registry (nvcr.io/, quay.io/jupyter/, docker.io/vllm/) " +
				"and be pinned to a version tag or digest, not latest: docker.io/library/busybox:1.37",
		},
		"allowlisted image on latest": {
			job:        job(func(j *batchv1.Job) { j.Spec.Template.Spec.Containers[0].Image = "nvcr.io/nvidia/pytorch:latest" }),
			wantReason: metav1.StatusReasonForbidden,
			wantErr:    "not latest: nvcr.io/nvidia/pytorch:latest",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			// The real team namespace from teams.yaml; a dry run is
			// admitted (or refused) exactly like a real create.
			_, err := env.Kube.BatchV1().Jobs("team-vision").Create(ctx, tc.job, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if tc.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Equal(t, tc.wantReason, apierrors.ReasonForError(err), "reason of %v", err)
			assert.Contains(t, err.Error(), tc.wantErr)
		})
	}
}

func TestAdminImpersonatesTeamMembersUnderRBAC(t *testing.T) {
	env := stacktest.Stack(t)
	ctx := context.Background()
	cases := map[string]struct {
		user, group, namespace string
		allowed                bool
	}{
		"researcher in own team":     {user: "alice", group: "vision-researchers", namespace: "team-vision", allowed: true},
		"lead in own team":           {user: "bob", group: "vision-leads", namespace: "team-vision", allowed: true},
		"researcher in another team": {user: "alice", group: "vision-researchers", namespace: "team-nlp"},
		"user without team":          {user: "frank", namespace: "team-vision"},
		"admin anywhere":             {user: "erin", group: "gantry-admins", namespace: "team-nlp", allowed: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			// As the portal impersonates and kubectl OIDC users appear: prefixed.
			var groups []string
			if tc.group != "" {
				groups = []string{tc.group}
			}
			kube := asPerson(t, env, tc.user, groups...)
			_, err := kube.BatchV1().Jobs(tc.namespace).Create(ctx, jobBuilder{name: "as-" + tc.user, namespace: tc.namespace, owner: tc.user,
				requests: quota("cpu", "1", "memory", "1Gi")}.obj(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if tc.allowed {
				require.NoError(t, err)
				return
			}
			assert.True(t, apierrors.IsForbidden(err), "forbidden, got %v", err)
		})
	}
}

func TestPrometheusHasDCGMUtilizationOfRunningPod(t *testing.T) {
	env := stacktest.Stack(t)
	require.NotEmpty(t, env.PrometheusURL, "state records the Prometheus URL")
	team := env.Team(t, stacktest.TeamSpec{Quotas: map[string]corev1.ResourceList{
		inferencePool: quota("nvidia.com/gpu", "2", "cpu", "8", "memory", "32Gi"),
	}})
	ns := team.Namespace()
	requests := quota("nvidia.com/gpu", "1", "cpu", "1", "memory", "4Gi")
	busy := createJob(t, env, jobBuilder{name: "busy", namespace: ns, requests: requests,
		annotations: map[string]string{"gantry.dev/simulate-duration": "10m"}})
	idle := createJob(t, env, jobBuilder{name: "idle", namespace: ns, requests: requests,
		annotations: map[string]string{"gantry.dev/simulate-duration": "10m", "gantry.dev/simulate-utilization": "3"}})
	busyPod := requireRunningOnPool(t, env, ns, "batch.kubernetes.io/job-name="+busy.Name, inferencePool, 1)[0]
	idlePod := requireRunningOnPool(t, env, ns, "batch.kubernetes.io/job-name="+idle.Name, inferencePool, 1)[0]

	for _, tc := range []struct {
		pod      corev1.Pod
		min, max float64
	}{{busyPod, 40, 95}, {idlePod, 3, 3}} {
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			series, err := promQuery(env.PrometheusURL, fmt.Sprintf(`DCGM_FI_DEV_GPU_UTIL{namespace=%q,pod=%q}`, ns, tc.pod.Name))
			require.NoError(c, err)
			require.Len(c, series, 1)
			s := series[0]
			assert.Equal(c, "main", s.Metric["container"])
			assert.Equal(c, "0", s.Metric["gpu"])
			assert.Equal(c, tc.pod.Spec.NodeName, s.Metric["Hostname"])
			assert.Equal(c, "NVIDIA-L40S", s.Metric["modelName"])
			v, err := strconv.ParseFloat(s.Value[1].(string), 64)
			require.NoError(c, err)
			assert.GreaterOrEqual(c, v, tc.min)
			assert.LessOrEqual(c, v, tc.max)
		}, 60*time.Second, time.Second, "DCGM utilization of %s", tc.pod.Name)
	}
}

type promSeries struct {
	Metric map[string]string `json:"metric"`
	Value  []any             `json:"value"`
}

func promQuery(base, query string) ([]promSeries, error) {
	resp, err := http.Get(base + "/api/v1/query?query=" + url.QueryEscape(query))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []promSeries `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("decode prometheus answer: %w", err)
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("prometheus query %s: %s", query, body.Error)
	}
	return body.Data.Result, nil
}
