package queue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/gantry-dev/gantry/internal/kube"
	"github.com/gantry-dev/gantry/internal/naming"
)

// CauseKind names a way a job ends or gets stuck.
type CauseKind string

// The endings a GPU job really meets.
const (
	CauseOutOfMemory  CauseKind = "out-of-memory"
	CauseExitCode     CauseKind = "exit-code"
	CauseDeadline     CauseKind = "time-limit"
	CausePreempted    CauseKind = "preempted"
	CauseEvicted      CauseKind = "evicted"
	CauseNodeLost     CauseKind = "node-lost"
	CauseImagePull    CauseKind = "image-pull"
	CausePodsNotReady CauseKind = "pods-not-ready"
	CauseDeleted      CauseKind = "deleted"
)

// Cause is why a job ended (or is stuck), in words, and what to do next.
type Cause struct {
	Kind CauseKind
	// Words is the one sentence that says why.
	Words string
	// Next is what to do now.
	Next string
	// Fix is the change to the launch parameters a relaunch should make;
	// nil when there is no obvious one.
	Fix *Fix
	// LogTail is the last lines the failed container printed, when known.
	LogTail []string
	// LogTailNote says, in words, why the last log lines (or the rest of
	// them) cannot be shown; "" when they were read.
	LogTailNote string
	// Pod, Container and Node are where it happened, when known.
	Pod, Container, Node string
	// Requeued is true when Kueue runs the job again by itself, so a
	// relaunch is not the next step.
	Requeued bool
}

// Fix is one launch parameter to change on relaunch.
type Fix struct {
	// Field is the launch form's field (naming.Field*), Value its new value.
	Field, Value string
	// Words says the change: "memory 16Gi → 32Gi".
	Words string
}

// LastLogLines reads the last n lines a container printed. It is the seam
// for the log reader of internal/kube (pods/log read as the signed-in
// user); a nil LastLogLines leaves a failure without log lines.
type LastLogLines func(ctx context.Context, namespace, pod, container string, n int) ([]string, error)

// PeakMemory reads the most memory a container used (its working set, in
// bytes) between start and end; ok is false when there are no samples. It
// is the seam for internal/gpu's Prometheus query of cAdvisor's
// container_memory_working_set_bytes; a nil PeakMemory leaves the peak
// unknown.
type PeakMemory func(ctx context.Context, namespace, pod, container string, start, end time.Time) (bytes int64, ok bool, err error)

// LogTailLines is how many log lines a failure shows.
const LogTailLines = 20

// causeOf finds why the job ended or is stuck; nil while nothing went wrong.
func (r StatusReader) causeOf(ctx context.Context, in StatusInput, st *JobStatus) *Cause {
	if c := deadlineCause(in.Job); c != nil {
		return c
	}
	if e := st.Eviction; e != nil && st.Phase == PhaseEvicted && e.Reason == kueue.WorkloadEvictedByPodsReadyTimeout {
		// Its pods may still be ending with the image pull error that
		// held them; the eviction is what happened to the job.
		return evictionCause(e)
	}
	if c := imagePullCause(in.Pods); c != nil {
		return c
	}
	if e := st.Eviction; e != nil && (st.Phase == PhasePreempted || st.Phase == PhaseEvicted) {
		return evictionCause(e)
	}
	if c := nodeCause(in.Pods); c != nil {
		return c
	}
	if f := st.Failure; f != nil && (st.Phase == PhaseFailed || in.Job == nil) {
		return failureCause(ctx, in, f, r.Memory)
	}
	if st.Phase == PhaseFailed {
		return &Cause{Kind: CauseExitCode, Words: "It failed: " + strings.TrimSuffix(st.Message, ".") + ".",
			Next: "Read its events and logs, fix the cause and relaunch it."}
	}
	return nil
}

// DeletedCause is a job a person deleted.
func DeletedCause(by string, at time.Time) *Cause {
	who := "someone"
	if by != "" {
		who = by
	}
	return &Cause{Kind: CauseDeleted, Words: fmt.Sprintf("It was deleted by %s at %s.", who, at.UTC().Format("2006-01-02 15:04 MST")),
		Next: "Relaunch it if it was deleted by mistake; its cost so far stays in the ledger."}
}

func deadlineCause(job *batchv1.Job) *Cause {
	if job == nil {
		return nil
	}
	for _, c := range job.Status.Conditions {
		if c.Type != batchv1.JobFailed || c.Status != corev1.ConditionTrue || c.Reason != batchv1.JobReasonDeadlineExceeded {
			continue
		}
		out := &Cause{Kind: CauseDeadline, Words: "It reached its time limit and was stopped.",
			Next: "Relaunch it with a longer time limit, or make it write checkpoints and resume from the last one."}
		if d := job.Spec.ActiveDeadlineSeconds; d != nil && *d > 0 {
			limit := time.Duration(*d) * time.Second
			out.Words = fmt.Sprintf("It reached its time limit of %s and was stopped.", minutesWords(limit))
			minutes := int(limit.Minutes())
			if minutes > 0 {
				out.Fix = &Fix{Field: naming.FieldDurationMinutes, Value: strconv.Itoa(2 * minutes),
					Words: fmt.Sprintf("time limit %d → %d minutes", minutes, 2*minutes)}
			}
		}
		return out
	}
	return nil
}

// roundWait rounds a measured wait to what a person would say of a
// configured timeout: whole 5 seconds under two minutes, else whole
// minutes (Kueue's and the events' timestamps are whole seconds).
func roundWait(d time.Duration) time.Duration {
	if d < 2*time.Minute {
		return max(d.Round(5*time.Second), time.Second)
	}
	return d.Round(time.Minute)
}

func minutesWords(d time.Duration) string {
	m := int(d.Minutes())
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%d seconds", int(d.Seconds()))
	case m == 1:
		return "1 minute"
	case m < 120 || m%60 != 0:
		return fmt.Sprintf("%d minutes", m)
	}
	return fmt.Sprintf("%d hours", m/60)
}

func imagePullCause(pods []*corev1.Pod) *Cause {
	for _, p := range pods {
		for _, cs := range p.Status.ContainerStatuses {
			w := cs.State.Waiting
			if w == nil || (w.Reason != "ErrImagePull" && w.Reason != "ImagePullBackOff" && w.Reason != "InvalidImageName") {
				continue
			}
			msg := strings.TrimSuffix(strings.TrimSpace(w.Message), ".")
			words := fmt.Sprintf("The image %s could not be pulled", cs.Image)
			if msg != "" {
				words += ": " + msg
			}
			return &Cause{Kind: CauseImagePull, Words: words + ".", Pod: p.Name, Container: cs.Name, Node: p.Spec.NodeName,
				Next: "Check the image name and tag in the template, and that the registry lets the cluster pull it; then relaunch."}
		}
	}
	return nil
}

func evictionCause(e *Eviction) *Cause {
	if e.Preempted {
		c := &Cause{Kind: CausePreempted, Requeued: e.Requeued}
		by := "a workload of higher priority"
		if e.PreemptedBy != "" {
			by = e.PreemptedBy
			if e.PreemptorTeam != "" {
				by += " of team " + e.PreemptorTeam
			}
		}
		why := "to make room for"
		if e.Reclaimed {
			why = "because the quota it borrowed was reclaimed by"
		}
		c.Words = fmt.Sprintf("It was preempted %s %s", why, by)
		if e.PreemptorPriorityClass != "" {
			c.Words += fmt.Sprintf(" (priority %s, %d)", e.PreemptorPriorityClass, e.PreemptorPriority)
		}
		c.Words += "."
		if e.Requeued {
			c.Next = "Nothing to do: Kueue put it back in the queue and it runs again when quota frees up; a job that writes checkpoints resumes from the last one."
		} else {
			c.Next = "Kueue will not requeue it: relaunch it, or ask for more quota of your own so it need not borrow."
		}
		return c
	}
	if e.Reason == kueue.WorkloadEvictedByPodsReadyTimeout {
		within := "in time"
		if e.NotReadyFor > 0 {
			within = "within " + minutesWords(roundWait(e.NotReadyFor))
		}
		c := &Cause{Kind: CausePodsNotReady, Requeued: e.Requeued}
		if e.Requeued {
			c.Words = fmt.Sprintf("Its pods were not all ready %s, so Kueue evicted it and will requeue it after a backoff (waitForPodsReady).", within)
			c.Next = "Look at its pods' events for what held them (an image that cannot be pulled, a pod that cannot be scheduled) and fix that; Kueue retries it by itself, waiting longer each time."
		} else {
			c.Words = fmt.Sprintf("Its pods were not all ready %s, so Kueue evicted it and gave up requeueing it (waitForPodsReady).", within)
			c.Next = "Look at its pods' events for what held them (an image that cannot be pulled, a pod that cannot be scheduled), fix that and relaunch it."
		}
		return c
	}
	if e.Reason == kueue.WorkloadEvictedDueToNodeFailures {
		return &Cause{Kind: CauseNodeLost, Requeued: e.Requeued, Words: "A node it ran on failed, so Kueue evicted it.",
			Next: "Nothing to do: Kueue requeues it onto healthy nodes; a job that writes checkpoints resumes from the last one."}
	}
	return &Cause{Kind: CauseEvicted, Requeued: e.Requeued, Words: fmt.Sprintf("Kueue evicted it (%s).", e.Reason),
		Next: "Kueue requeues it when it can run again; ask an admin if it stays evicted."}
}

// nodeCause finds a pod the node evicted (pressure) or lost with the node.
func nodeCause(pods []*corev1.Pod) *Cause {
	for _, p := range pods {
		if p.Status.Reason == "Evicted" {
			return &Cause{Kind: CauseEvicted, Pod: p.Name, Node: p.Spec.NodeName,
				Words: fmt.Sprintf("Node %s evicted pod %s: %s.", p.Spec.NodeName, p.Name, strings.TrimSuffix(strings.TrimSpace(p.Status.Message), ".")),
				Next:  "Nothing you did: the node ran short of a resource. Relaunch it (or wait for its retry); ask an admin if the node keeps doing this."}
		}
		for _, c := range p.Status.Conditions {
			// The taint manager evicts pods from an unreachable node; pod
			// garbage collection removes those of a node that is gone.
			if c.Type != corev1.DisruptionTarget || c.Status != corev1.ConditionTrue {
				continue
			}
			lost := &Cause{Kind: CauseNodeLost, Pod: p.Name, Node: p.Spec.NodeName,
				Next: "Nothing you did: relaunch it (or wait for its retry) and it runs on a healthy node."}
			switch c.Reason {
			case "DeletionByTaintManager":
				// The node lifecycle controller tainted the node not-ready or
				// unreachable, and the pod's toleration of that ran out.
				lost.Words = fmt.Sprintf("Node %s was lost (not ready or not answering), so pod %s was evicted from it.", p.Spec.NodeName, p.Name)
				return lost
			case "DeletionByPodGC":
				lost.Words = fmt.Sprintf("Node %s stopped answering and pod %s was removed from it.", p.Spec.NodeName, p.Name)
				return lost
			}
		}
	}
	return nil
}

func failureCause(ctx context.Context, in StatusInput, f *Failure, memory PeakMemory) *Cause {
	c := &Cause{Pod: f.Pod, Container: f.Container}
	for _, p := range in.Pods {
		if p.Name == f.Pod {
			c.Node = p.Spec.NodeName
		}
	}
	if f.OOMKilled {
		c.Kind = CauseOutOfMemory
		limit := memoryLimit(in.Pods, f.Pod, f.Container)
		if limit.IsZero() {
			c.Words = fmt.Sprintf("Container %s of pod %s ran out of memory and was killed.", f.Container, f.Pod)
			c.Next = "Relaunch it with more memory, or use a smaller batch."
			return c
		}
		more := limit.DeepCopy()
		more.Add(limit)
		peak := "peak unknown"
		if b, ok := peakMemory(ctx, in, f, memory); ok {
			peak = "peak " + memoryWords(b)
		}
		c.Words = fmt.Sprintf("Container %s of pod %s ran out of memory: it reached its %s limit (%s) and was killed.", f.Container, f.Pod, limit.String(), peak)
		c.Next = fmt.Sprintf("Relaunch it with more memory (%s), or use a smaller batch.", more.String())
		c.Fix = &Fix{Field: naming.FieldMemory, Value: more.String(), Words: fmt.Sprintf("memory %s → %s", limit.String(), more.String())}
		return c
	}
	c.Kind = CauseExitCode
	c.Words = fmt.Sprintf("Container %s of pod %s exited with code %d", f.Container, f.Pod, f.ExitCode)
	if f.Reason != "" && f.Reason != "Error" {
		c.Words += " (" + f.Reason + ")"
	}
	c.Words += "."
	c.Next = "Read its last log lines, fix the error and relaunch it."
	if in.Logs != nil {
		ns := ""
		for _, p := range in.Pods {
			if p.Name == f.Pod {
				ns = p.Namespace
			}
		}
		lines, err := in.Logs(ctx, ns, f.Pod, f.Container, LogTailLines)
		c.LogTail = lines
		if err != nil {
			c.LogTailNote = logTailNote(err, len(lines) > 0)
		}
	}
	return c
}

// logTailNote says why a failed container's last log lines cannot be read,
// by the kind of the API server's error; partial when some were read. Only
// an API server that does not answer is "now": the others will not change.
func logTailNote(err error, partial bool) string {
	what := "Its last log lines"
	if partial {
		what = "The rest of its last log lines"
	}
	switch {
	case errors.Is(err, kube.ErrUnreachable):
		return what + " cannot be read now: the Kubernetes API server is not answering."
	case errors.Is(err, kube.ErrForbidden):
		return what + " cannot be shown: you may not read this pod's logs."
	case errors.Is(err, kube.ErrNotFound):
		return what + " are gone: the pod or its log no longer exists."
	}
	return what + " cannot be read now: the cluster did not return them."
}

// peakMemory is the most memory the failed container used over its run
// (from its start to its kill); false when unknown.
func peakMemory(ctx context.Context, in StatusInput, f *Failure, memory PeakMemory) (int64, bool) {
	if memory == nil {
		return 0, false
	}
	var ns string
	var start, end time.Time
	for _, p := range in.Pods {
		if p.Name != f.Pod {
			continue
		}
		ns = p.Namespace
		if p.Status.StartTime != nil {
			start = p.Status.StartTime.Time
		}
		for _, cs := range p.Status.ContainerStatuses {
			t := cs.State.Terminated
			if t == nil {
				t = cs.LastTerminationState.Terminated
			}
			if cs.Name == f.Container && t != nil {
				if !t.StartedAt.IsZero() {
					start = t.StartedAt.Time
				}
				end = t.FinishedAt.Time
			}
		}
	}
	if end.IsZero() {
		end = in.Now
	}
	if start.IsZero() || end.IsZero() || !end.After(start) {
		return 0, false
	}
	b, ok, err := memory(ctx, ns, f.Pod, f.Container, start, end)
	if err != nil || !ok {
		return 0, false
	}
	return b, true
}

// memoryWords writes bytes as a person reads a memory figure: 15.9Gi, 812Mi.
func memoryWords(b int64) string {
	const mi, gi = 1 << 20, 1 << 30
	if b >= gi {
		return strings.TrimSuffix(strconv.FormatFloat(float64(b)/gi, 'f', 1, 64), ".0") + "Gi"
	}
	return strconv.FormatInt((b+mi/2)/mi, 10) + "Mi"
}

func memoryLimit(pods []*corev1.Pod, pod, container string) resource.Quantity {
	for _, p := range pods {
		if p.Name != pod {
			continue
		}
		for _, ctr := range p.Spec.Containers {
			if ctr.Name == container {
				return ctr.Resources.Limits[corev1.ResourceMemory]
			}
		}
	}
	return resource.Quantity{}
}

// preemptor fills in who preempted: the team and the priority of the
// preempting workload.
func (e *Eviction) preemptor(by *kueue.Workload) {
	e.PreemptedBy = ownerName(by)
	e.PreemptorTeam, _ = naming.TeamOfNamespace(by.Namespace)
	if ref := by.Spec.PriorityClassRef; ref != nil {
		e.PreemptorPriorityClass = ref.Name
	}
	if by.Spec.Priority != nil {
		e.PreemptorPriority = *by.Spec.Priority
	}
}
