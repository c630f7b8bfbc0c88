package queue

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gantry-dev/gantry/internal/catalog"
	"github.com/gantry-dev/gantry/internal/devcluster/stacktest"
	"github.com/gantry-dev/gantry/internal/store"
)

// recording starts two attempt recorders (a leader and one that believes
// it leads too) writing to a fresh database, and returns the database.
func (s statusEnv) recording(t *testing.T) *store.Store {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	db, err := store.Open(ctx, stacktest.Postgres(t))
	require.NoError(t, err)
	require.NoError(t, store.Migrate(ctx, db.SQL(), slog.New(slog.NewTextHandler(io.Discard, nil))))
	done := make(chan struct{}, 2)
	for range 2 {
		rec := &AttemptRecorder{Store: db, Objects: s.jobs, Reader: StatusReader{Queues: s.reader.Queues, Workloads: s.jobs},
			Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
		go func() { rec.Run(ctx, 200*time.Millisecond); done <- struct{}{} }()
	}
	t.Cleanup(func() {
		cancel()
		<-done
		<-done
		_ = db.Close()
	})
	return db
}

func (s statusEnv) attempts(t require.TestingT, db *store.Store, job string) []Attempt {
	ms, err := db.JobMoments(context.Background(), s.ns, job)
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, m := range ms {
		require.False(t, seen[m.MomentKey], "moment %s written twice", m.MomentKey)
		seen[m.MomentKey] = true
	}
	return Attempts(ms)
}

// runningPods waits until the job has n running pods and returns them.
func (s statusEnv) runningPods(t *testing.T, job string, n int) []*corev1.Pod {
	t.Helper()
	var out []*corev1.Pod
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		pods, err := s.jobs.Pods(s.ns, job)
		require.NoError(c, err)
		out = out[:0]
		for _, p := range pods {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				out = append(out, p.DeepCopy())
			}
		}
		assert.Len(c, out, n)
	}, 2*time.Minute, 250*time.Millisecond)
	return out
}

// livePod reads a pod from the API server: a status is written over the
// pod as it is there (as the kubelet does), never over the portal's cached
// copy, which keeps only what pages read (no finalizers, few labels).
func (s statusEnv) livePod(t *testing.T, name string) *corev1.Pod {
	t.Helper()
	pod, err := s.env.Kube.CoreV1().Pods(s.ns).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	return pod
}

// failPod writes the status the kubelet writes when the container exits
// with code: the pod failed.
func (s statusEnv) failPod(t *testing.T, cached *corev1.Pod, code int32) {
	t.Helper()
	pod := s.livePod(t, cached.Name)
	now := metav1.Now()
	pod.Status.Phase = corev1.PodFailed
	for i := range pod.Status.ContainerStatuses {
		cs := &pod.Status.ContainerStatuses[i]
		started := now
		if cs.State.Running != nil {
			started = cs.State.Running.StartedAt
		}
		cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: "Error", StartedAt: started, FinishedAt: now}}
		cs.Ready = false
	}
	_, err := s.env.Kube.CoreV1().Pods(s.ns).UpdateStatus(context.Background(), pod, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// A two-node training job whose second pod (index 1) fails: the attempt
// names that pod as the first failure, and the next attempt (the Job's
// retry of index 1) says how long the job took to run again.
func TestMultiNodeJobSecondPodFailsFirstAndRecovers(t *testing.T) {
	s := newStatusEnv(t)
	db := s.recording(t)
	job := stacktest.CompliantJob(s.team, "ddp", corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1"), "cpu": resource.MustParse("1"), "memory": resource.MustParse("1Gi")})
	job.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
	job.Spec.Completions, job.Spec.Parallelism, job.Spec.BackoffLimit = ptr.To[int32](2), ptr.To[int32](2), ptr.To[int32](2)
	job.Spec.Template.Annotations = long
	job.Spec.Template.Spec.Tolerations = []corev1.Toleration{catalog.GPUToleration()}
	_, err := s.env.Kube.BatchV1().Jobs(s.ns).Create(context.Background(), job, metav1.CreateOptions{})
	require.NoError(t, err)

	pods := s.runningPods(t, "ddp", 2)
	var second *corev1.Pod
	for _, p := range pods {
		if p.Labels["batch.kubernetes.io/job-completion-index"] == "1" {
			second = p
		}
	}
	require.NotNil(t, second, "the pod of index 1")
	s.failPod(t, second, 1)

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		as := s.attempts(c, db, "ddp")
		require.Len(c, as, 2, "the first run and the retry")
		first, retry := as[0], as[1]
		assert.Equal(c, EndingPodFailed, first.Ending)
		assert.Equal(c, second.Name, first.Pod, "the second pod failed first")
		require.NotNil(c, first.Index)
		assert.Equal(c, 1, *first.Index)
		assert.Equal(c, second.Spec.NodeName, first.Node)
		assert.Equal(c, CauseExitCode, first.Cause)
		assert.Equal(c, fmt.Sprintf("Container main of pod %s exited with code 1.", second.Name), first.Words)
		assert.False(c, retry.Start.IsZero())
		assert.True(c, retry.End.IsZero(), "the retry still runs")
		assert.Positive(c, retry.Recovery)
		assert.Equal(c, retry.Start.Sub(first.End), retry.Recovery)
		assert.Less(c, retry.Recovery, 2*time.Minute)
	}, 2*time.Minute, 250*time.Millisecond)
	as := s.attempts(t, db, "ddp")
	t.Logf("recovery of the retry: %s (failed %s, running again %s)", as[1].Recovery, as[0].End.Format(time.RFC3339Nano), as[1].Start.Format(time.RFC3339Nano))
}

// A node that goes away while it runs a pod: pod garbage collection
// fails and removes the pod; its attempt keeps "node lost" and the node's
// name in the database, where they outlive the pod.
func TestNodeLostWhileRunningIsRecordedWithTheNode(t *testing.T) {
	s := newStatusEnv(t)
	db := s.recording(t)
	ctx := context.Background()
	node := s.env.TestNode(t, "lost", h100)

	job := stacktest.CompliantJob(s.team, "on-lost-node", corev1.ResourceList{"cpu": resource.MustParse("1"), "memory": resource.MustParse("1Gi")})
	job.Spec.Template.Annotations = long
	job.Spec.Template.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": node}
	job.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: stacktest.TestNodeTaint, Operator: corev1.TolerationOpExists}}
	_, err := s.env.Kube.BatchV1().Jobs(s.ns).Create(ctx, job, metav1.CreateOptions{})
	require.NoError(t, err)
	pod := s.runningPods(t, "on-lost-node", 1)[0]
	require.Equal(t, node, pod.Spec.NodeName)

	require.NoError(t, s.env.Kube.CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{}))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		as := s.attempts(c, db, "on-lost-node")
		require.NotEmpty(c, as)
		a := as[0]
		assert.Equal(c, CauseNodeLost, a.Cause)
		assert.Equal(c, node, a.Node)
		assert.Equal(c, pod.Name, a.Pod)
		assert.Equal(c, fmt.Sprintf("Node %s stopped answering and pod %s was removed from it.", node, pod.Name), a.Words)
	}, 3*time.Minute, time.Second)
}
