package queue

import (
	"context"
	"errors"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/gantry-dev/gantry/internal/cost"
	"github.com/gantry-dev/gantry/internal/kube"
)

// EndingJobs is the part of the job cache a run's cause is read from.
type EndingJobs interface {
	Job(namespace, name string) (*batchv1.Job, error)
	Pods(namespace, instance string) ([]*corev1.Pod, error)
}

// LedgerCauses tells the cost ledger why a failed or evicted run ended,
// with the rules the job page uses, so failed-run cost can be shown by
// cause after the job's objects are gone.
type LedgerCauses struct {
	Jobs EndingJobs
}

// RunCause is the cause kind of a run that ended failed or evicted; empty
// when it cannot be told.
func (l LedgerCauses) RunCause(_ context.Context, r cost.Run) string {
	if r.Outcome == cost.OutcomeEvicted {
		return string(EvictionKind(r.Reason))
	}
	if r.Outcome != cost.OutcomeFailed || l.Jobs == nil {
		return ""
	}
	pods, err := l.Jobs.Pods(r.Namespace, r.JobName)
	if err != nil {
		pods = nil
	}
	var job *batchv1.Job
	if r.JobKind == "Job" {
		if j, err := l.Jobs.Job(r.Namespace, r.JobName); err == nil {
			job = j
		} else if !errors.Is(err, kube.ErrNotFound) {
			return ""
		}
	}
	if c := deadlineCause(job); c != nil {
		return string(c.Kind)
	}
	if c := imagePullCause(pods); c != nil {
		return string(c.Kind)
	}
	if c := nodeCause(pods); c != nil {
		return string(c.Kind)
	}
	if f := failureOf(pods); f != nil && f.OOMKilled {
		return string(CauseOutOfMemory)
	}
	return string(CauseExitCode)
}

// EvictionKind is the cause of an eviction from the reason Kueue gave
// ("Preempted: ..." as the ledger keeps it).
func EvictionKind(reason string) CauseKind {
	reason, _, _ = strings.Cut(reason, ":")
	switch reason {
	case kueue.WorkloadEvictedByPreemption:
		return CausePreempted
	case kueue.WorkloadEvictedByPodsReadyTimeout:
		return CausePodsNotReady
	case kueue.WorkloadEvictedDueToNodeFailures:
		return CauseNodeLost
	}
	return CauseEvicted
}
