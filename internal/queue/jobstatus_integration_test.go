package queue

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gantry-dev/gantry/internal/devcluster/stacktest"
	"github.com/gantry-dev/gantry/internal/kube"
	"github.com/gantry-dev/gantry/internal/naming"
)

const h100 = "h100-sxm-ib-training"

// statusEnv is a throwaway team with 8 H100 GPUs in a cohort of its own and
// the caches and reader the portal uses.
type statusEnv struct {
	env    *stacktest.Env
	team   string
	ns     string
	jobs   *kube.JobCache
	reader StatusReader
}

func newStatusEnv(t *testing.T) statusEnv {
	t.Helper()
	return newStatusEnvIn(t, "", 8)
}

// newStatusEnvIn is a throwaway team with gpus H100 GPUs of its own in
// cohort (a cohort of its own when empty).
func newStatusEnvIn(t *testing.T, cohort string, gpus int) statusEnv {
	t.Helper()
	env := stacktest.Stack(t)
	team := env.Team(t, stacktest.TeamSpec{Cohort: cohort, Quotas: map[string]corev1.ResourceList{
		h100: {"nvidia.com/gpu": resource.MustParse(fmt.Sprint(gpus)), "cpu": resource.MustParse("32"), "memory": resource.MustParse("128Gi")},
	}})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	clients, err := kube.NewClients(env.RESTConfig)
	require.NoError(t, err)
	queues, err := kube.NewCache(clients.Kueue, 0)
	require.NoError(t, err)
	jobs, err := kube.NewJobCache(clients.Kube, clients.Kueue, 0)
	require.NoError(t, err)
	queues.Start(ctx)
	jobs.Start(ctx)
	require.NoError(t, queues.WaitForSync(ctx))
	require.NoError(t, jobs.WaitForSync(ctx))
	events, err := kube.NewEventCache(clients.Kube, 0)
	require.NoError(t, err)
	events.Start(ctx)
	require.NoError(t, events.WaitForSync(ctx))
	return statusEnv{env: env, team: team.Name, ns: team.Namespace(), jobs: jobs,
		reader: StatusReader{Queues: queues, Workloads: jobs, Positions: VisibilityPositions{Client: clients.Kueue}, Events: events}}
}

// gpuJob is a training Job on the H100 pool asking for gpus GPUs.
func (s statusEnv) gpuJob(t *testing.T, name string, gpus int, priority string, annotations map[string]string) *batchv1.Job {
	t.Helper()
	job := stacktest.CompliantJob(s.team, name, corev1.ResourceList{
		"nvidia.com/gpu": resource.MustParse(fmt.Sprint(gpus)), "cpu": resource.MustParse("1"), "memory": resource.MustParse("1Gi"),
	})
	job.Labels[naming.LabelPriorityClass] = priority
	job.Spec.Template.Labels[naming.LabelPriorityClass] = priority
	// Memory limited to the request, as the portal's templates render it.
	job.Spec.Template.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory] = resource.MustParse("1Gi")
	stacktest.OnPool(job, h100)
	job.Spec.Template.Annotations = annotations
	job.Spec.BackoffLimit = ptr.To[int32](0)
	created, err := s.env.Kube.BatchV1().Jobs(s.ns).Create(context.Background(), job, metav1.CreateOptions{})
	require.NoError(t, err)
	return created
}

func (s statusEnv) status(t require.TestingT, name string) JobStatus {
	wls, err := s.jobs.WorkloadsOwnedBy(s.ns, "Job", name)
	require.NoError(t, err)
	pods, err := s.jobs.Pods(s.ns, name)
	require.NoError(t, err)
	return s.reader.JobStatus(context.Background(), StatusInput{Workloads: wls, Pods: pods, Now: time.Now()})
}

var long = map[string]string{"gantry.dev/simulate-duration": "10m"}

func TestPendingJobShowsPositionAndShortfall(t *testing.T) {
	s := newStatusEnv(t)
	s.gpuJob(t, "big", 8, "training", long)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, PhaseRunning, s.status(c, "big").Phase)
	}, time.Minute, 250*time.Millisecond)
	s.gpuJob(t, "first", 4, "batch", long)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.NotNil(c, s.status(c, "first").Pending)
	}, 30*time.Second, 250*time.Millisecond)
	// Kueue orders equal priorities by creation time, which Kubernetes
	// keeps in whole seconds: "second" must be created in a later second
	// than "first" for "first" to be ahead of it.
	wls, err := s.jobs.WorkloadsOwnedBy(s.ns, "Job", "first")
	require.NoError(t, err)
	require.Len(t, wls, 1)
	time.Sleep(time.Until(wls[0].CreationTimestamp.Add(time.Second)))
	s.gpuJob(t, "second", 4, "batch", long)

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		st := s.status(c, "second")
		require.Equal(c, PhaseQueued, st.Phase)
		require.NotNil(c, st.Pending)
		p := st.Pending
		assert.Equal(c, h100, p.Flavor)
		assert.Equal(c, "nvidia.com/gpu", p.Resource)
		assert.Equal(c, int64(4), p.Needed)
		assert.Equal(c, int64(8), p.TeamNominal)
		assert.Equal(c, int64(8), p.TeamReserved)
		assert.Equal(c, 1, p.PositionCluster, "one job ahead in the ClusterQueue")
		assert.Equal(c, 1, p.PositionLocal)
		assert.Contains(c, p.Words, "waiting for 4 H100 GPUs: your team uses 8 of 8, the cohort has none to lend")
		assert.Contains(c, p.Words, "1 job ahead")
		assert.Contains(c, p.Raw, h100, "Kueue's own message names the flavor")
		assert.Positive(c, st.Waited)
	}, 30*time.Second, 250*time.Millisecond)
	firstStatus := s.status(t, "first")
	require.NotNil(t, firstStatus.Pending)
	assert.Equal(t, 0, firstStatus.Pending.PositionCluster)
	assert.Contains(t, firstStatus.Pending.Words, "next in line")
}

func TestPreemptedJobNamesPreemptor(t *testing.T) {
	s := newStatusEnv(t)
	s.gpuJob(t, "low", 8, "batch", long)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, PhaseRunning, s.status(c, "low").Phase)
	}, time.Minute, 250*time.Millisecond)
	s.gpuJob(t, "urgent", 8, "inference", long)

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		st := s.status(c, "low")
		require.NotNil(c, st.Eviction)
		assert.True(c, st.Eviction.Preempted)
		assert.Equal(c, "urgent", st.Eviction.PreemptedBy)
		assert.Equal(c, s.team, st.Eviction.PreemptorTeam)
		var phases []Phase
		for _, m := range st.Timeline {
			phases = append(phases, m.Phase)
		}
		assert.Contains(c, phases, PhasePreempted)
		assert.Contains(c, phases, PhaseAdmitted)
	}, time.Minute, 250*time.Millisecond)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, PhaseRunning, s.status(c, "urgent").Phase)
	}, time.Minute, 250*time.Millisecond)
}

func TestFailedJobShowsExitCodeAndReason(t *testing.T) {
	s := newStatusEnv(t)
	s.gpuJob(t, "oom", 1, "batch", map[string]string{
		"gantry.dev/simulate-duration": "2s", "gantry.dev/simulate-exit-code": "137", "gantry.dev/simulate-reason": "OOMKilled",
	})
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		st := s.status(c, "oom")
		assert.Equal(c, PhaseFailed, st.Phase)
		require.NotNil(c, st.Failure)
		assert.Equal(c, int32(137), st.Failure.ExitCode)
		assert.Equal(c, "OOMKilled", st.Failure.Reason)
		assert.True(c, st.Failure.OOMKilled)
		assert.Equal(c, "main", st.Failure.Container)
		assert.Equal(c, int64(1), st.Allocation.Count)
		assert.Equal(c, h100, st.Allocation.Flavor)
		assert.NotEmpty(c, st.Allocation.Nodes)
		require.NotNil(c, st.Cause)
		assert.Equal(c, CauseOutOfMemory, st.Cause.Kind)
		assert.Equal(c, "Container main of pod "+st.Failure.Pod+" ran out of memory: it reached its 1Gi limit (peak unknown) and was killed.", st.Cause.Words)
		assert.Equal(c, "Relaunch it with more memory (2Gi), or use a smaller batch.", st.Cause.Next)
		assert.Equal(c, &Fix{Field: naming.FieldMemory, Value: "2Gi", Words: "memory 1Gi → 2Gi"}, st.Cause.Fix)
	}, time.Minute, 250*time.Millisecond)
}

func TestNonZeroExitCodeSaysWhichContainerAndWhatToDo(t *testing.T) {
	s := newStatusEnv(t)
	s.gpuJob(t, "crash", 1, "batch", map[string]string{"gantry.dev/simulate-duration": "2s", "gantry.dev/simulate-exit-code": "3"})
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		st := s.status(c, "crash")
		require.Equal(c, PhaseFailed, st.Phase)
		require.NotNil(c, st.Cause)
		require.NotNil(c, st.Failure)
		assert.Equal(c, CauseExitCode, st.Cause.Kind)
		assert.Equal(c, "Container main of pod "+st.Failure.Pod+" exited with code 3.", st.Cause.Words)
		assert.Equal(c, "Read its last log lines, fix the error and relaunch it.", st.Cause.Next)
		assert.Nil(c, st.Cause.Fix, "no change to suggest for a program's own error")
	}, time.Minute, 250*time.Millisecond)
}

func TestTimeLimitReachedSaysTheLimit(t *testing.T) {
	s := newStatusEnv(t)
	job := stacktest.CompliantJob(s.team, "slow", corev1.ResourceList{"cpu": resource.MustParse("1"), "memory": resource.MustParse("1Gi")})
	job.Spec.Template.Annotations = long
	job.Spec.ActiveDeadlineSeconds = ptr.To[int64](5)
	_, err := s.env.Kube.BatchV1().Jobs(s.ns).Create(context.Background(), job, metav1.CreateOptions{})
	require.NoError(t, err)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		st := s.statusOfJob(c, "slow")
		require.Equal(c, PhaseFailed, st.Phase)
		require.NotNil(c, st.Cause)
		assert.Equal(c, CauseDeadline, st.Cause.Kind)
		assert.Equal(c, "It reached its time limit of 5 seconds and was stopped.", st.Cause.Words)
		assert.Equal(c, "Relaunch it with a longer time limit, or make it write checkpoints and resume from the last one.", st.Cause.Next)
	}, time.Minute, 250*time.Millisecond)
}

func TestImagePullFailureNamesTheImageAndTheRegistryError(t *testing.T) {
	s := newStatusEnv(t)
	s.gpuJob(t, "badimage", 1, "batch", map[string]string{"gantry.dev/simulate-image-pull-error": "manifest unknown"})
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		st := s.status(c, "badimage")
		assert.Equal(c, PhaseCreating, st.Phase)
		require.NotNil(c, st.Cause)
		assert.Equal(c, CauseImagePull, st.Cause.Kind)
		assert.Contains(c, st.Cause.Words, "The image "+stacktest.Image+" could not be pulled: ")
		assert.Contains(c, st.Cause.Words, "manifest unknown.")
		assert.Equal(c, "Check the image name and tag in the template, and that the registry lets the cluster pull it; then relaunch.", st.Cause.Next)
	}, time.Minute, 250*time.Millisecond)
}

func TestPreemptedByReclaimWithinTheCohortNamesTeamPriorityAndRequeue(t *testing.T) {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	cohort := "c" + hex.EncodeToString(b)
	// The borrower runs 8 GPUs on 4 of its own and 4 lent by the lender
	// (a team may borrow up to its own quota again); the lender then needs
	// all 8 of its own back.
	lender := newStatusEnvIn(t, cohort, 8)
	borrower := newStatusEnvIn(t, cohort, 4)
	borrower.gpuJob(t, "borrowed", 8, "training", long)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, PhaseRunning, borrower.status(c, "borrowed").Phase)
	}, time.Minute, 250*time.Millisecond)
	lender.gpuJob(t, "mine", 8, "batch", long)

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		st := borrower.status(c, "borrowed")
		require.NotNil(c, st.Cause)
		assert.Equal(c, PhasePreempted, st.Phase)
		assert.Equal(c, CausePreempted, st.Cause.Kind)
		assert.Regexp(c, `^It was preempted because the quota it borrowed was reclaimed by mine of team `+lender.team+` \(priority batch, -?\d+\)\.$`, st.Cause.Words)
		assert.True(c, st.Cause.Requeued)
		assert.Contains(c, st.Cause.Next, "Kueue put it back in the queue")
	}, time.Minute, 250*time.Millisecond)
}

// statusOfJob reads the status of a Job with the Job itself, as the portal does.
func (s statusEnv) statusOfJob(t require.TestingT, name string) JobStatus {
	wls, err := s.jobs.WorkloadsOwnedBy(s.ns, "Job", name)
	require.NoError(t, err)
	pods, err := s.jobs.Pods(s.ns, name)
	require.NoError(t, err)
	job, err := s.jobs.Job(s.ns, name)
	require.NoError(t, err)
	return s.reader.JobStatus(context.Background(), StatusInput{Workloads: wls, Pods: pods, Job: job, Now: time.Now()})
}

// The kubelet evicts a pod under node pressure (here the test writes the
// status the kubelet writes): the cause names the node and its words.
func TestNodePressureEvictionNamesTheNode(t *testing.T) {
	s := newStatusEnv(t)
	s.gpuJob(t, "pressed", 1, "batch", long)
	var pod *corev1.Pod
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		pods, err := s.jobs.Pods(s.ns, "pressed")
		require.NoError(c, err)
		require.Len(c, pods, 1)
		require.Equal(c, corev1.PodRunning, pods[0].Status.Phase)
		pod = pods[0]
	}, time.Minute, 250*time.Millisecond)
	pod = s.livePod(t, pod.Name)
	msg := "The node was low on resource: memory. Threshold quantity: 100Mi, available: 51200Ki."
	pod.Status.Phase, pod.Status.Reason, pod.Status.Message = corev1.PodFailed, "Evicted", msg
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
		Reason: "TerminationByKubelet", Message: msg, LastTransitionTime: metav1.Now()})
	for i := range pod.Status.ContainerStatuses {
		pod.Status.ContainerStatuses[i].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "Error",
			StartedAt: metav1.Now(), FinishedAt: metav1.Now()}}
	}
	_, err := s.env.Kube.CoreV1().Pods(s.ns).UpdateStatus(context.Background(), pod, metav1.UpdateOptions{})
	require.NoError(t, err)

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		st := s.statusOfJob(c, "pressed")
		assert.Equal(c, PhaseFailed, st.Phase)
		require.NotNil(c, st.Cause)
		assert.Equal(c, CauseEvicted, st.Cause.Kind)
		assert.Equal(c, "Node "+pod.Spec.NodeName+" evicted pod "+pod.Name+": "+msg, st.Cause.Words)
		assert.Equal(c, pod.Spec.NodeName, st.Cause.Node)
		assert.Contains(c, st.Cause.Next, "the node ran short of a resource")
	}, time.Minute, 250*time.Millisecond)
}
