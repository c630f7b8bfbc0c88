package queue

import (
	"slices"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// Phase is where a job stands, in the one vocabulary every kind, page,
// list and API answer shares.
type Phase string

// The phases of a job, in the order a job usually meets them.
const (
	PhaseQueued        Phase = "queued"
	PhaseQuotaReserved Phase = "quota reserved"
	PhaseAdmitted      Phase = "admitted"
	// PhaseCreating is a job whose objects or pods exist but whose
	// containers have not started: just launched, or its pods are being
	// scheduled and their images pulled.
	PhaseCreating  Phase = "creating"
	PhaseRunning   Phase = "running"
	PhaseSucceeded Phase = "succeeded"
	PhaseFailed    Phase = "failed"
	PhasePreempted Phase = "preempted"
	PhaseEvicted   Phase = "evicted"
	PhaseStopped   Phase = "stopped"
	PhaseDeleted   Phase = "deleted"
)

// Ended reports whether the phase is an end a job does not leave by itself.
func (p Phase) Ended() bool {
	return p == PhaseSucceeded || p == PhaseFailed || p == PhaseDeleted
}

// PhaseOf is a job's phase and the cluster's own words about it, read from
// its Kueue Workloads, its pods and (for a batch Job) the Job. The job list,
// the job page and the API all take their phase from here.
func PhaseOf(in StatusInput) (Phase, string) {
	if in.Stopped {
		return PhaseStopped, "Stopped: no pods run. Resume to start it again."
	}
	if in.Job != nil {
		for _, c := range in.Job.Status.Conditions {
			if c.Status != corev1.ConditionTrue {
				continue
			}
			switch c.Type {
			case batchv1.JobComplete:
				return PhaseSucceeded, "All pods finished successfully."
			case batchv1.JobFailed:
				return PhaseFailed, c.Message
			}
		}
	}
	wl := newest(in.Workloads)
	if wl == nil {
		switch {
		case anyRunning(in.Pods):
			return PhaseRunning, ""
		case len(in.Pods) > 0 && allEnded(in.Pods, corev1.PodSucceeded):
			return PhaseSucceeded, "All pods finished successfully."
		case len(in.Pods) > 0 && allEnded(in.Pods, corev1.PodSucceeded, corev1.PodFailed):
			return PhaseFailed, "A pod failed."
		case len(in.Pods) > 0 && !anyGated(in.Pods):
			return PhaseCreating, "The pods are being scheduled and started."
		}
		return PhaseQueued, "Waiting for Kueue to admit it."
	}
	conds := wl.Status.Conditions
	if c := trueCond(conds, kueue.WorkloadFinished); c != nil {
		if c.Reason == kueue.WorkloadFinishedReasonSucceeded {
			return PhaseSucceeded, c.Message
		}
		return PhaseFailed, c.Message
	}
	if anyRunning(in.Pods) {
		// An endpoint with one replica running and one waiting is running.
		return PhaseRunning, ""
	}
	if c := nodeCause(in.Pods); c != nil {
		// Its pod was evicted from its node; one lost with a NotReady node
		// stays Terminating there, and the Job waits for it to end.
		return PhaseEvicted, c.Words
	}
	if trueCond(conds, kueue.WorkloadQuotaReserved) == nil {
		if c := trueCond(conds, kueue.WorkloadEvicted); c != nil {
			if c.Reason == kueue.WorkloadEvictedByPreemption || trueCond(conds, kueue.WorkloadPreempted) != nil {
				return PhasePreempted, c.Message
			}
			return PhaseEvicted, c.Message
		}
		msg := "Waiting for Kueue to admit it."
		if c := findCond(conds, kueue.WorkloadQuotaReserved); c != nil && c.Message != "" {
			msg = c.Message
		}
		return PhaseQueued, msg
	}
	if trueCond(conds, kueue.WorkloadAdmitted) == nil {
		return PhaseQuotaReserved, "Kueue reserved quota; admission checks are pending."
	}
	if len(in.Pods) > 0 {
		return PhaseCreating, "Kueue admitted it; its pods are being scheduled and started."
	}
	return PhaseAdmitted, "Kueue admitted it; its pods are being created."
}

func anyRunning(pods []*corev1.Pod) bool {
	for _, p := range pods {
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
			return true
		}
	}
	return false
}

// allEnded reports whether every pod is in one of the ended phases.
func allEnded(pods []*corev1.Pod, phases ...corev1.PodPhase) bool {
	for _, p := range pods {
		if !slices.Contains(phases, p.Status.Phase) {
			return false
		}
	}
	return true
}

// anyGated reports whether a pod still waits for Kueue's admission gate.
func anyGated(pods []*corev1.Pod) bool {
	for _, p := range pods {
		for _, g := range p.Spec.SchedulingGates {
			if g.Name == admissionGate {
				return true
			}
		}
	}
	return false
}

// admissionGate is the scheduling gate Kueue puts on pods it has not admitted.
const admissionGate = "kueue.x-k8s.io/admission"
