package queue

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/gantry-dev/gantry/internal/naming"
	"github.com/gantry-dev/gantry/internal/store"
)

// Ending is how an attempt of a job ended.
type Ending string

// The endings of an attempt. A pod failure ends an attempt the job may
// retry (within its backoffLimit); the others are Kueue's and the job's.
const (
	EndingPodFailed Ending = "pod-failed"
	EndingFailed    Ending = "failed"
	EndingSucceeded Ending = "succeeded"
	EndingPreempted Ending = "preempted"
	EndingEvicted   Ending = "evicted"
)

// Notifies reports whether the job's owner and team hear of this ending:
// the job failed, was preempted or finished.
func (e Ending) Notifies() bool {
	return e == EndingFailed || e == EndingSucceeded || e == EndingPreempted
}

// Attempt is one run of a job: from when it was running until it ended.
type Attempt struct {
	// Number counts attempts from 1.
	Number int
	// Start is when the attempt was running; zero for an attempt that
	// ended before any pod ran (e.g. preempted while its pods started).
	Start time.Time
	// End is when it ended; zero while it runs.
	End    time.Time
	Ending Ending
	Cause  CauseKind
	// Words is the cause's sentence.
	Words string
	// Pod is the pod that failed first (for a multi-node job, the one
	// whose failure ended the attempt), Node where it ran and Index its
	// completion index (nil when not an Indexed Job).
	Pod, Node string
	Index     *int
	// AlsoFailed are pods that failed after it, before the job ran again.
	AlsoFailed []string
	// Recovery is the time from the previous attempt's end to this one
	// running; zero for the first attempt.
	Recovery time.Duration
}

// Attempts reads a job's attempts from its recorded moments: an attempt
// begins when a pod runs while none is running, and ends at the first
// failure, eviction, preemption or finish after that.
func Attempts(moments []store.JobMoment) []Attempt {
	ms := slices.Clone(moments)
	slices.SortStableFunc(ms, func(a, b store.JobMoment) int {
		if c := a.At.Compare(b.At); c != 0 {
			return c
		}
		// An ending and a start in the same instant: the ending first.
		return cmp.Compare(b.Kind, a.Kind)
	})
	var out []Attempt
	open := false
	for _, m := range ms {
		switch m.Kind {
		case store.MomentStarted:
			if open {
				continue // another pod of the same attempt
			}
			a := Attempt{Number: len(out) + 1, Start: m.At}
			if n := len(out); n > 0 && !out[n-1].End.IsZero() {
				a.Recovery = max(0, m.At.Sub(out[n-1].End))
			}
			out = append(out, a)
			open = true
		case store.MomentEnded:
			if open {
				endAttempt(&out[len(out)-1], m)
				open = false
				continue
			}
			if n := len(out); n > 0 {
				last := &out[n-1]
				switch {
				case Ending(m.Ending) == EndingPodFailed:
					if m.Pod != last.Pod && !slices.Contains(last.AlsoFailed, m.Pod) {
						last.AlsoFailed = append(last.AlsoFailed, m.Pod)
					}
					continue
				case last.Ending == EndingPodFailed && Ending(m.Ending) != EndingPodFailed:
					// The job gave up after the pod failure (or Kueue
					// stepped in): that is how the attempt ended; the pod's
					// own words say why, unless there are none.
					last.Ending = Ending(m.Ending)
					if last.Words == "" {
						last.Words, last.Cause = m.Words, CauseKind(m.Cause)
					}
					continue
				case last.Ending == Ending(m.Ending):
					continue
				}
			}
			a := Attempt{Number: len(out) + 1}
			endAttempt(&a, m)
			out = append(out, a)
		}
	}
	return out
}

func endAttempt(a *Attempt, m store.JobMoment) {
	a.End, a.Ending, a.Cause, a.Words = m.At, Ending(m.Ending), CauseKind(m.Cause), m.Words
	a.Pod, a.Node, a.Index = m.Pod, m.Node, m.PodIndex
}

// Recovery is a team's time from a failure to running again.
type Recovery struct {
	// Count is the number of recoveries measured.
	Count int
	// Median and P90 of the recovery times.
	Median, P90 time.Duration
}

// TeamRecovery measures the recoveries of the team's jobs that were
// running again at or after from. moments holds each job's moments whole.
func TeamRecovery(moments []store.JobMoment, from time.Time) Recovery {
	byJob := map[string][]store.JobMoment{}
	for _, m := range moments {
		k := m.Namespace + "/" + m.Job
		byJob[k] = append(byJob[k], m)
	}
	var secs []float64
	for _, ms := range byJob {
		for _, a := range Attempts(ms) {
			if a.Number > 1 && !a.Start.IsZero() && !a.Start.Before(from) {
				secs = append(secs, a.Recovery.Seconds())
			}
		}
	}
	if len(secs) == 0 {
		return Recovery{}
	}
	slices.Sort(secs)
	return Recovery{Count: len(secs), Median: seconds(quantile(secs, 0.5)), P90: seconds(quantile(secs, 0.9))}
}

// quantile of sorted values by linear interpolation.
func quantile(sorted []float64, q float64) float64 {
	pos := q * float64(len(sorted)-1)
	lo := int(pos)
	if lo+1 >= len(sorted) {
		return sorted[lo]
	}
	return sorted[lo] + (sorted[lo+1]-sorted[lo])*(pos-float64(lo))
}

func seconds(s float64) time.Duration {
	return time.Duration(s * float64(time.Second)).Round(time.Second)
}

// PodMoments are the moments a pod of job shows: it started running (each
// time its container started, for restarts in place) and it failed or was
// lost with its node.
func PodMoments(ctx context.Context, job string, p *corev1.Pod) []store.JobMoment {
	base := store.JobMoment{Team: teamOfNamespace(p.Namespace), Namespace: p.Namespace, Job: job, Pod: p.Name, Node: p.Spec.NodeName, PodIndex: completionIndex(p)}
	var out []store.JobMoment
	uid := string(p.UID)
	if at, ok := podStarted(p); ok {
		m := base
		m.Kind, m.MomentKey, m.At = store.MomentStarted, "pod-start/"+uid, at
		out = append(out, m)
	}
	for _, cs := range p.Status.ContainerStatuses {
		// A container restarted in place (restartPolicy OnFailure): its last
		// run failed, its current one started again.
		if t := cs.LastTerminationState.Terminated; t != nil && t.ExitCode != 0 && cs.RestartCount > 0 {
			n := strconv.Itoa(int(cs.RestartCount))
			m := base
			m.Kind, m.MomentKey, m.At, m.Ending = store.MomentEnded, "pod-end/"+uid+"/"+cs.Name+"/"+n, t.FinishedAt.Time, string(EndingPodFailed)
			c := failureCause(ctx, StatusInput{Pods: []*corev1.Pod{p}}, &Failure{Pod: p.Name, Container: cs.Name, ExitCode: t.ExitCode,
				Reason: t.Reason, Message: t.Message, OOMKilled: t.Reason == "OOMKilled"}, nil)
			m.Cause, m.Words = string(c.Kind), c.Words
			out = append(out, m)
			if r := cs.State.Running; r != nil {
				s := base
				s.Kind, s.MomentKey, s.At = store.MomentStarted, "pod-start/"+uid+"/"+cs.Name+"/"+n, r.StartedAt.Time
				out = append(out, s)
			}
		}
	}
	if m, ok := podEnded(ctx, base, p); ok {
		out = append(out, m)
	}
	return out
}

func podEnded(ctx context.Context, base store.JobMoment, p *corev1.Pod) (store.JobMoment, bool) {
	m := base
	m.Kind, m.MomentKey, m.Ending = store.MomentEnded, "pod-end/"+string(p.UID), string(EndingPodFailed)
	if c := nodeCause([]*corev1.Pod{p}); c != nil {
		m.Cause, m.Words = string(c.Kind), c.Words
		m.At = disruptedAt(p)
		return m, true
	}
	if p.Status.Phase != corev1.PodFailed {
		return m, false
	}
	f := failureOf([]*corev1.Pod{p})
	if f == nil {
		m.At = disruptedAt(p)
		m.Words = fmt.Sprintf("Pod %s failed: %s", p.Name, p.Status.Message)
		return m, true
	}
	c := failureCause(ctx, StatusInput{Pods: []*corev1.Pod{p}}, f, nil)
	m.Cause, m.Words = string(c.Kind), c.Words
	m.At = finishedAt(p, f.Container)
	return m, true
}

// podStarted is when the pod's containers first ran.
func podStarted(p *corev1.Pod) (time.Time, bool) {
	var first time.Time
	for _, cs := range p.Status.ContainerStatuses {
		var at metav1.Time
		switch {
		case cs.State.Running != nil:
			at = cs.State.Running.StartedAt
		case cs.State.Terminated != nil:
			at = cs.State.Terminated.StartedAt
		}
		if cs.RestartCount > 0 && cs.LastTerminationState.Terminated != nil {
			at = cs.LastTerminationState.Terminated.StartedAt
		}
		if !at.IsZero() && (first.IsZero() || at.Before(&metav1.Time{Time: first})) {
			first = at.Time
		}
	}
	if first.IsZero() && p.Status.StartTime != nil && p.Status.Phase == corev1.PodRunning {
		first = p.Status.StartTime.Time
	}
	return first, !first.IsZero()
}

func finishedAt(p *corev1.Pod, container string) time.Time {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == container && cs.State.Terminated != nil && !cs.State.Terminated.FinishedAt.IsZero() {
			return cs.State.Terminated.FinishedAt.Time
		}
	}
	return disruptedAt(p)
}

// disruptedAt is when the pod was disrupted or failed, as its conditions say.
func disruptedAt(p *corev1.Pod) time.Time {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue && !c.LastTransitionTime.IsZero() {
			return c.LastTransitionTime.Time
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionFalse && !c.LastTransitionTime.IsZero() {
			return c.LastTransitionTime.Time
		}
	}
	if p.DeletionTimestamp != nil {
		return p.DeletionTimestamp.Time
	}
	return time.Now()
}

func completionIndex(p *corev1.Pod) *int {
	v, ok := p.Labels["batch.kubernetes.io/job-completion-index"]
	if !ok {
		v, ok = p.Annotations["batch.kubernetes.io/job-completion-index"]
	}
	if !ok {
		return nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return nil
	}
	return &n
}

// WorkloadMoments are the endings a Workload shows: each eviction or
// preemption, and its finish. in is the job's status input (its pods and
// Job), read for the cause of a failure; job names the job.
func (r StatusReader) WorkloadMoments(ctx context.Context, job string, wl *kueue.Workload, in StatusInput) []store.JobMoment {
	base := store.JobMoment{Team: teamOfNamespace(wl.Namespace), Namespace: wl.Namespace, Job: job, Kind: store.MomentEnded}
	var out []store.JobMoment
	if c := trueCond(wl.Status.Conditions, kueue.WorkloadEvicted); c != nil {
		e := r.eviction(wl, c)
		cause := evictionCause(e)
		m := base
		m.MomentKey = fmt.Sprintf("wl-evict/%s/%d", wl.UID, c.LastTransitionTime.Unix())
		m.At, m.Ending, m.Cause, m.Words = c.LastTransitionTime.Time, string(EndingEvicted), string(cause.Kind), cause.Words
		if e.Preempted {
			m.Ending = string(EndingPreempted)
		}
		out = append(out, m)
	}
	if c := trueCond(wl.Status.Conditions, kueue.WorkloadFinished); c != nil {
		m := base
		m.MomentKey, m.At = "wl-finish/"+string(wl.UID), c.LastTransitionTime.Time
		if c.Reason == kueue.WorkloadFinishedReasonSucceeded {
			m.Ending, m.Words = string(EndingSucceeded), "It finished successfully."
		} else {
			m.Ending = string(EndingFailed)
			in.Workloads = []*kueue.Workload{wl}
			st := r.JobStatus(ctx, in)
			if st.Cause != nil {
				m.Cause, m.Words, m.Pod, m.Node = string(st.Cause.Kind), st.Cause.Words, st.Cause.Pod, st.Cause.Node
			} else {
				m.Words = "It failed: " + c.Message
			}
		}
		out = append(out, m)
	}
	return out
}

// teamOfNamespace is the team of a team namespace; empty for others, whose
// moments are not recorded.
func teamOfNamespace(ns string) string {
	team, _ := naming.TeamOfNamespace(ns)
	return team
}
