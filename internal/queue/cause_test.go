package queue

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/gantry-dev/gantry/internal/kube"
)

// podOf is a pod of the job on a node with one container "main" limited to memory.
func podOf(name, node, memory string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team-vision"}}
	p.Spec.NodeName = node
	p.Spec.Containers = []corev1.Container{{Name: "main", Image: "registry.example/train:v1",
		Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(memory)}}}}
	return p
}

func terminated(p *corev1.Pod, code int32, reason string) *corev1.Pod {
	p.Status.Phase = corev1.PodFailed
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", Image: p.Spec.Containers[0].Image,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason}}}}
	return p
}

func failedJob(reason, message string, deadline *int64) *batchv1.Job {
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: "team-vision"}}
	j.Spec.ActiveDeadlineSeconds = deadline
	j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: reason, Message: message}}
	return j
}

// evictedWorkload is a Workload Kueue evicted for reason, not holding quota.
func evictedWorkload(reason, preemptedReason, message string, active bool) *kueue.Workload {
	wl := &kueue.Workload{ObjectMeta: metav1.ObjectMeta{Name: "job-train-1", Namespace: "team-vision"}}
	wl.Spec.Active = ptr.To(active)
	wl.Status.Conditions = []metav1.Condition{
		{Type: kueue.WorkloadQuotaReserved, Status: metav1.ConditionFalse, Reason: "Pending"},
		{Type: kueue.WorkloadEvicted, Status: metav1.ConditionTrue, Reason: reason, Message: message},
	}
	if preemptedReason != "" {
		wl.Status.Conditions = append(wl.Status.Conditions, metav1.Condition{Type: kueue.WorkloadPreempted, Status: metav1.ConditionTrue,
			Reason: preemptedReason, Message: message})
	}
	return wl
}

// notReadyWorkload was admitted and, notReady later, evicted by Kueue's
// waitForPodsReady; it is requeued.
func notReadyWorkload(notReady time.Duration) *kueue.Workload {
	admitted := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	wl := evictedWorkload(kueue.WorkloadEvictedByPodsReadyTimeout, "", "Exceeded the PodsReady timeout team-vision/job-train-1", true)
	wl.Status.Conditions[1].LastTransitionTime = metav1.NewTime(admitted.Add(notReady))
	wl.Status.Conditions = append(wl.Status.Conditions, metav1.Condition{Type: kueue.WorkloadAdmitted, Status: metav1.ConditionTrue,
		Reason: "Admitted", LastTransitionTime: metav1.NewTime(admitted)})
	return wl
}

type workloadsByUID map[string]*kueue.Workload

func (w workloadsByUID) WorkloadByUID(uid string) (*kueue.Workload, bool) {
	wl, ok := w[uid]
	return wl, ok
}

func TestCauseOfEachEnding(t *testing.T) {
	preemptor := &kueue.Workload{ObjectMeta: metav1.ObjectMeta{Name: "job-urgent-2", Namespace: "team-nlp",
		OwnerReferences: []metav1.OwnerReference{{Kind: "Job", Name: "urgent"}}},
		Spec: kueue.WorkloadSpec{PriorityClassRef: &kueue.PriorityClassRef{Name: "inference"}, Priority: ptr.To[int32](1000)}}
	reader := StatusReader{Workloads: workloadsByUID{"0b5c6a36-4c8e-4b6f-9f0a-2d3c4e5f6a7b": preemptor}}
	logs := func(_ context.Context, namespace, pod, container string, n int) ([]string, error) {
		if namespace != "team-vision" || pod != "train-0" || container != "main" || n != LogTailLines {
			t.Errorf("log tail read for %s/%s/%s (%d lines)", namespace, pod, container, n)
		}
		return []string{"epoch 3", "KeyError: 'label'"}, nil
	}
	imagePull := podOf("train-0", "h100-node-1", "16Gi")
	imagePull.Status.Phase = corev1.PodPending
	imagePull.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", Image: "registry.example/train:v9",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull",
			Message: `failed to pull and unpack image "registry.example/train:v9": manifest unknown`}}}}
	pressure := podOf("train-0", "h100-node-2", "16Gi")
	pressure.Status.Phase, pressure.Status.Reason, pressure.Status.Message = corev1.PodFailed, "Evicted", "The node was low on resource: memory."
	lost := podOf("train-0", "h100-node-3", "16Gi")
	lost.Status.Phase = corev1.PodFailed
	lost.Status.Conditions = []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "DeletionByTaintManager"}}
	preemptMsg := "Preempted to accommodate a workload (UID: 0b5c6a36-4c8e-4b6f-9f0a-2d3c4e5f6a7b, JobUID: x) due to reclamation within the cohort"

	cases := map[string]struct {
		in    StatusInput
		phase Phase
		want  *Cause
	}{
		"out of memory: the limit, the peak unknown without memory samples, and double it on relaunch": {
			in:    StatusInput{Pods: []*corev1.Pod{terminated(podOf("train-0", "h100-node-1", "16Gi"), 137, "OOMKilled")}, Job: failedJob("BackoffLimitExceeded", "Job has reached the specified backoff limit", nil)},
			phase: PhaseFailed,
			want: &Cause{Kind: CauseOutOfMemory, Pod: "train-0", Container: "main", Node: "h100-node-1",
				Words: "Container main of pod train-0 ran out of memory: it reached its 16Gi limit (peak unknown) and was killed.",
				Next:  "Relaunch it with more memory (32Gi), or use a smaller batch.",
				Fix:   &Fix{Field: "memory", Value: "32Gi", Words: "memory 16Gi → 32Gi"}},
		},
		"non-zero exit code, with the last log lines": {
			in:    StatusInput{Pods: []*corev1.Pod{terminated(podOf("train-0", "h100-node-1", "16Gi"), 2, "Error")}, Job: failedJob("BackoffLimitExceeded", "Job has reached the specified backoff limit", nil), Logs: logs},
			phase: PhaseFailed,
			want: &Cause{Kind: CauseExitCode, Pod: "train-0", Container: "main", Node: "h100-node-1",
				Words: "Container main of pod train-0 exited with code 2.", Next: "Read its last log lines, fix the error and relaunch it.",
				LogTail: []string{"epoch 3", "KeyError: 'label'"}},
		},
		"time limit reached: relaunch with twice the time": {
			in:    StatusInput{Job: failedJob(batchv1.JobReasonDeadlineExceeded, "Job was active longer than specified deadline", ptr.To[int64](600))},
			phase: PhaseFailed,
			want: &Cause{Kind: CauseDeadline, Words: "It reached its time limit of 10 minutes and was stopped.",
				Next: "Relaunch it with a longer time limit, or make it write checkpoints and resume from the last one.",
				Fix:  &Fix{Field: "durationMinutes", Value: "20", Words: "time limit 10 → 20 minutes"}},
		},
		"preempted by reclaim: who, which team, what priority, requeued": {
			in:    StatusInput{Workloads: []*kueue.Workload{evictedWorkload(kueue.WorkloadEvictedByPreemption, kueue.InCohortReclamationReason, preemptMsg, true)}},
			phase: PhasePreempted,
			want: &Cause{Kind: CausePreempted, Requeued: true,
				Words: "It was preempted because the quota it borrowed was reclaimed by urgent of team nlp (priority inference, 1000).",
				Next:  "Nothing to do: Kueue put it back in the queue and it runs again when quota frees up; a job that writes checkpoints resumes from the last one."},
		},
		"image pull failure: the image and the registry's error": {
			in:    StatusInput{Pods: []*corev1.Pod{imagePull}},
			phase: PhaseCreating,
			want: &Cause{Kind: CauseImagePull, Pod: "train-0", Container: "main", Node: "h100-node-1",
				Words: `The image registry.example/train:v9 could not be pulled: failed to pull and unpack image "registry.example/train:v9": manifest unknown.`,
				Next:  "Check the image name and tag in the template, and that the registry lets the cluster pull it; then relaunch."},
		},
		"pods not ready in time, Kueue gave up": {
			in:    StatusInput{Workloads: []*kueue.Workload{evictedWorkload(kueue.WorkloadEvictedByPodsReadyTimeout, "", "Exceeded the PodsReady timeout team-vision/job-train-1", false)}},
			phase: PhaseEvicted,
			want: &Cause{Kind: CausePodsNotReady, Words: "Its pods were not all ready in time, so Kueue evicted it and gave up requeueing it (waitForPodsReady).",
				Next: "Look at its pods' events for what held them (an image that cannot be pulled, a pod that cannot be scheduled), fix that and relaunch it."},
		},
		"pods not ready within the time since admission, requeued": {
			in:    StatusInput{Workloads: []*kueue.Workload{notReadyWorkload(31 * time.Second)}},
			phase: PhaseEvicted,
			want: &Cause{Kind: CausePodsNotReady, Requeued: true,
				Words: "Its pods were not all ready within 30 seconds, so Kueue evicted it and will requeue it after a backoff (waitForPodsReady).",
				Next:  "Look at its pods' events for what held them (an image that cannot be pulled, a pod that cannot be scheduled) and fix that; Kueue retries it by itself, waiting longer each time."},
		},
		"evicted by node pressure, with the node": {
			in:    StatusInput{Pods: []*corev1.Pod{pressure}},
			phase: PhaseFailed,
			want: &Cause{Kind: CauseEvicted, Pod: "train-0", Node: "h100-node-2",
				Words: "Node h100-node-2 evicted pod train-0: The node was low on resource: memory.",
				Next:  "Nothing you did: the node ran short of a resource. Relaunch it (or wait for its retry); ask an admin if the node keeps doing this."},
		},
		"node lost, with the node": {
			in:    StatusInput{Pods: []*corev1.Pod{lost}},
			phase: PhaseFailed,
			want: &Cause{Kind: CauseNodeLost, Pod: "train-0", Node: "h100-node-3",
				Words: "Node h100-node-3 was lost (not ready or not answering), so pod train-0 was evicted from it.",
				Next:  "Nothing you did: relaunch it (or wait for its retry) and it runs on a healthy node."},
		},
		"running, nothing wrong": {
			in:    StatusInput{Pods: []*corev1.Pod{func() *corev1.Pod { p := podOf("train-0", "n", "1Gi"); p.Status.Phase = corev1.PodRunning; return p }()}},
			phase: PhaseRunning,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tc.in.Now = time.Now()
			st := reader.JobStatus(context.Background(), tc.in)
			if diff := cmp.Diff(tc.phase, st.Phase); diff != "" {
				t.Errorf("phase (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, st.Cause); diff != "" {
				t.Errorf("cause (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDeletedCauseNamesWho(t *testing.T) {
	c := DeletedCause("alice", time.Date(2026, 3, 4, 10, 30, 0, 0, time.UTC))
	if diff := cmp.Diff("It was deleted by alice at 2026-03-04 10:30 UTC.", c.Words); diff != "" {
		t.Error(diff)
	}
}

// An out-of-memory cause says the limit and the peak the container reached
// over its run, as Prometheus measured it; without samples, that the peak
// is unknown.
func TestOutOfMemoryCauseSaysThePeak(t *testing.T) {
	started := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	killed := started.Add(42 * time.Minute)
	pod := terminated(podOf("train-0", "h100-node-1", "16Gi"), 137, "OOMKilled")
	pod.Status.ContainerStatuses[0].State.Terminated.StartedAt = metav1.NewTime(started)
	pod.Status.ContainerStatuses[0].State.Terminated.FinishedAt = metav1.NewTime(killed)
	in := StatusInput{Pods: []*corev1.Pod{pod}, Job: failedJob("BackoffLimitExceeded", "Job has reached the specified backoff limit", nil), Now: killed.Add(time.Hour)}
	cases := map[string]struct {
		bytes int64
		ok    bool
		want  string
	}{
		"peak measured": {bytes: 17072495001, ok: true, want: "Container main of pod train-0 ran out of memory: it reached its 16Gi limit (peak 15.9Gi) and was killed."},
		"peak in MiB":   {bytes: 812 << 20, ok: true, want: "Container main of pod train-0 ran out of memory: it reached its 16Gi limit (peak 812Mi) and was killed."},
		"no samples":    {want: "Container main of pod train-0 ran out of memory: it reached its 16Gi limit (peak unknown) and was killed."},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			memory := func(_ context.Context, namespace, pod, container string, start, end time.Time) (int64, bool, error) {
				if namespace != pod0Namespace(in) || pod != "train-0" || container != "main" || !start.Equal(started) || !end.Equal(killed) {
					t.Errorf("peak read for %s/%s/%s from %s to %s", namespace, pod, container, start, end)
				}
				return tc.bytes, tc.ok, nil
			}
			st := StatusReader{Memory: memory}.JobStatus(context.Background(), in)
			require.NotNil(t, st.Cause)
			assert.Equal(t, tc.want, st.Cause.Words)
			assert.Equal(t, "memory 16Gi → 32Gi", st.Cause.Fix.Words)
		})
	}
}

func pod0Namespace(in StatusInput) string { return in.Pods[0].Namespace }

// A failed container whose last log lines cannot be read gets a note
// saying why, by the kind of the API server's error, instead of nothing.
func TestExitCodeCauseSaysWhyItsLogCannotBeRead(t *testing.T) {
	pod := terminated(podOf("train-0", "h100-node-1", "16Gi"), 2, "Error")
	gr := schema.GroupResource{Resource: "pods/log"}
	cases := map[string]struct {
		lines    []string
		err      error
		wantTail []string
		wantNote string
	}{
		"API server not answering": {
			err:      apiServerDown(),
			wantNote: "Its last log lines cannot be read now: the Kubernetes API server is not answering.",
		},
		"not allowed": {
			err:      kube.MapError(apierrors.NewForbidden(gr, "train-0", errors.New("no"))),
			wantNote: "Its last log lines cannot be shown: you may not read this pod's logs.",
		},
		"pod gone": {
			err:      kube.MapError(apierrors.NewNotFound(gr, "train-0")),
			wantNote: "Its last log lines are gone: the pod or its log no longer exists.",
		},
		"another error": {
			err:      kube.MapError(apierrors.NewInternalError(errors.New("boom"))),
			wantNote: "Its last log lines cannot be read now: the cluster did not return them.",
		},
		"cut off while reading": {
			lines: []string{"epoch 3"}, err: kube.MapError(&net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}),
			wantTail: []string{"epoch 3"},
			wantNote: "The rest of its last log lines cannot be read now: the Kubernetes API server is not answering.",
		},
		"read": {
			lines: []string{"epoch 3", "KeyError: 'label'"}, wantTail: []string{"epoch 3", "KeyError: 'label'"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			logs := func(_ context.Context, namespace, pod, container string, _ int) ([]string, error) {
				if tc.err != nil {
					return tc.lines, fmt.Errorf("last log lines of %s/%s %s: %w", namespace, pod, container, tc.err)
				}
				return tc.lines, nil
			}
			in := StatusInput{Pods: []*corev1.Pod{pod}, Job: failedJob("BackoffLimitExceeded", "Job has reached the specified backoff limit", nil), Logs: logs, Now: time.Now()}
			st := StatusReader{}.JobStatus(context.Background(), in)
			require.NotNil(t, st.Cause)
			assert.Equal(t, "Container main of pod train-0 exited with code 2.", st.Cause.Words)
			assert.Equal(t, tc.wantTail, st.Cause.LogTail)
			assert.Equal(t, tc.wantNote, st.Cause.LogTailNote)
		})
	}
}
