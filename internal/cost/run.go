// Package cost turns Kueue Workloads into GPU-hours and money: the run of a
// workload from admission to its end, the admin's price per flavor, the
// ledger written when a run ends, and team and cluster reports from it.
package cost

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// Outcomes of an ended run.
const (
	OutcomeSucceeded = "succeeded"
	OutcomeFailed    = "failed"
	OutcomeEvicted   = "evicted"
	// OutcomeStopped is a run whose workload was deleted while it ran: a
	// stopped notebook or a job deleted by its owner. It is spend, neither
	// a success nor a failure.
	OutcomeStopped = "stopped"
)

// Allocation is what a workload was given at admission: the accelerator
// resource it holds in one flavor. CPU-only workloads have GPUs 0.
type Allocation struct {
	Flavor   string
	Resource string
	// GPUs counts whole GPUs, or MIG slices for nvidia.com/mig-* resources.
	GPUs int64
}

// AllocationOf reads the flavor and accelerator count from a workload's
// admission; ok is false when the workload holds no quota.
func AllocationOf(wl *kueue.Workload) (Allocation, bool) {
	if wl.Status.Admission == nil {
		return Allocation{}, false
	}
	var a Allocation
	for _, ps := range wl.Status.Admission.PodSetAssignments {
		for res, q := range ps.ResourceUsage {
			if !IsAccelerator(res) {
				continue
			}
			a.Resource = string(res)
			a.Flavor = string(ps.Flavors[res])
			a.GPUs += q.Value()
		}
	}
	if a.Flavor == "" {
		a.Flavor = nonAcceleratorFlavor(wl.Status.Admission.PodSetAssignments)
	}
	return a, true
}

// nonAcceleratorFlavor is the pool of a workload without GPUs: the flavor
// its CPU was assigned from, else that of its first resource by name, so
// the answer never depends on map order.
func nonAcceleratorFlavor(psas []kueue.PodSetAssignment) string {
	for _, ps := range psas {
		if f := ps.Flavors[corev1.ResourceCPU]; f != "" {
			return string(f)
		}
	}
	for _, ps := range psas {
		names := slices.Sorted(maps.Keys(ps.Flavors))
		for _, res := range names {
			if f := ps.Flavors[res]; f != "" {
				return string(f)
			}
		}
	}
	return ""
}

// IsAccelerator reports whether a resource is a GPU or a GPU slice.
func IsAccelerator(res corev1.ResourceName) bool {
	return strings.HasPrefix(string(res), "nvidia.com/") || res == "amd.com/gpu"
}

// Run is one admission of a workload until it ended (or until now while it runs).
type Run struct {
	Allocation
	WorkloadUID, Namespace, Workload string
	// JobKind and JobName are the workload's owner (Job, Pod, ...).
	JobKind, JobName         string
	Created, Admitted, Ended time.Time
	// Outcome is empty while the run goes on.
	Outcome, Reason string
}

// Key identifies the run in the ledger: the workload UID and admission
// time, so a workload evicted and admitted again has one row per run.
func (r Run) Key() string {
	return fmt.Sprintf("%s@%d", r.WorkloadUID, r.Admitted.Unix())
}

// Duration is how long the run held its quota.
func (r Run) Duration() time.Duration {
	if r.Ended.Before(r.Admitted) {
		return 0
	}
	return r.Ended.Sub(r.Admitted)
}

// GPUHours is the allocated GPU-hours of the run.
func (r Run) GPUHours() float64 {
	return float64(r.GPUs) * r.Duration().Hours()
}

// Wait is how long the workload waited before this admission.
func (r Run) Wait() time.Duration {
	if r.Admitted.Before(r.Created) {
		return 0
	}
	return r.Admitted.Sub(r.Created)
}

// AdmittedAt returns when the workload was admitted, if it is.
func AdmittedAt(wl *kueue.Workload) (time.Time, bool) {
	if c := apimeta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadAdmitted); c != nil && c.Status == metav1.ConditionTrue {
		return c.LastTransitionTime.Time, true
	}
	return time.Time{}, false
}

func runOf(wl *kueue.Workload) (Run, bool) {
	alloc, ok := AllocationOf(wl)
	if !ok {
		return Run{}, false
	}
	admitted, ok := AdmittedAt(wl)
	if !ok {
		return Run{}, false
	}
	r := Run{Allocation: alloc, WorkloadUID: string(wl.UID), Namespace: wl.Namespace, Workload: wl.Name,
		Created: wl.CreationTimestamp.Time, Admitted: admitted}
	for _, ref := range wl.OwnerReferences {
		r.JobKind, r.JobName = ref.Kind, ref.Name
		if ref.Controller != nil && *ref.Controller {
			break
		}
	}
	if r.JobName == "" {
		r.JobKind, r.JobName = "Workload", wl.Name
	}
	return r, true
}

// Ongoing returns the run of an admitted workload that has not ended, with
// Ended set to now; ok is false otherwise.
func Ongoing(wl *kueue.Workload, now time.Time) (Run, bool) {
	if apimeta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadFinished) {
		return Run{}, false
	}
	r, ok := runOf(wl)
	if !ok {
		return Run{}, false
	}
	r.Ended = now
	return r, true
}

// Finished returns the run of a workload whose job ended; ok is false while
// it has not.
func Finished(wl *kueue.Workload) (Run, bool) {
	c := apimeta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadFinished)
	if c == nil || c.Status != metav1.ConditionTrue {
		return Run{}, false
	}
	r, ok := runOf(wl)
	if !ok {
		return Run{}, false
	}
	r.Ended = c.LastTransitionTime.Time
	r.Outcome, r.Reason = OutcomeSucceeded, c.Message
	if c.Reason != kueue.WorkloadFinishedReasonSucceeded {
		r.Outcome = OutcomeFailed
	}
	return r, true
}

// Deleted returns the run that ended when an admitted workload was deleted
// before it finished; ok is false otherwise.
func Deleted(wl *kueue.Workload, now time.Time) (Run, bool) {
	if r, ok := Finished(wl); ok {
		return r, true
	}
	r, ok := Ongoing(wl, now)
	if !ok {
		return Run{}, false
	}
	if wl.DeletionTimestamp != nil {
		r.Ended = wl.DeletionTimestamp.Time
	}
	r.Outcome, r.Reason = OutcomeStopped, "deleted while running"
	return r, true
}

// Evicted returns the run that ended when old, admitted, became new,
// evicted; ok is false for any other change.
func Evicted(old, new *kueue.Workload) (Run, bool) {
	c := apimeta.FindStatusCondition(new.Status.Conditions, kueue.WorkloadEvicted)
	if c == nil || c.Status != metav1.ConditionTrue || apimeta.IsStatusConditionTrue(old.Status.Conditions, kueue.WorkloadEvicted) {
		return Run{}, false
	}
	if apimeta.IsStatusConditionTrue(new.Status.Conditions, kueue.WorkloadFinished) {
		return Run{}, false
	}
	r, ok := runOf(old)
	if !ok {
		return Run{}, false
	}
	r.Ended = c.LastTransitionTime.Time
	r.Outcome, r.Reason = OutcomeEvicted, c.Reason+": "+c.Message
	return r, true
}
