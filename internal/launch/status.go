package launch

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/gantry-dev/gantry/internal/catalog"
	"github.com/gantry-dev/gantry/internal/kube"
)

// Phases a job moves through, as shown to people.
const (
	PhaseQueued    = "queued"
	PhaseAdmitted  = "admitted"
	PhaseRunning   = "running"
	PhaseSucceeded = "succeeded"
	PhaseFailed    = "failed"
	PhaseStopped   = "stopped"
)

const admissionGate = "kueue.x-k8s.io/admission"

// PodStatus is one pod of a job.
type PodStatus struct {
	Name, Phase, Node, Pool string
}

// Status is a job's state from the informer cache.
type Status struct {
	Name, Namespace, Team, Owner, Template, Version, Pool string
	Kind                                                  catalog.Kind
	Phase                                                 string
	// Message is Kueue's or Kubernetes' own words about the phase.
	Message                 string
	Replicas, ReadyReplicas int32
	Pods                    []PodStatus
}

// JobReader is the part of the job cache status needs.
type JobReader interface {
	Job(namespace, name string) (*batchv1.Job, error)
	StatefulSet(namespace, name string) (*appsv1.StatefulSet, error)
	Deployment(namespace, name string) (*appsv1.Deployment, error)
	Pods(namespace, instance string) ([]*corev1.Pod, error)
	WorkloadsOwnedBy(namespace, kind, name string) ([]*kueue.Workload, error)
}

// StatusOf reads a job's status. kind says which object to look for.
func StatusOf(r JobReader, namespace, name string, kind catalog.Kind) (Status, error) {
	pods, err := r.Pods(namespace, name)
	if err != nil {
		return Status{}, err
	}
	st := Status{Name: name, Namespace: namespace, Kind: kind}
	for _, p := range pods {
		st.Pods = append(st.Pods, PodStatus{Name: p.Name, Phase: string(p.Status.Phase), Node: p.Spec.NodeName, Pool: p.Spec.NodeSelector[catalog.LabelPool]})
	}
	switch kind {
	case catalog.KindTraining:
		job, err := r.Job(namespace, name)
		if err != nil {
			return Status{}, err
		}
		st.fromLabels(job.Labels)
		st.Replicas = derefOr(job.Spec.Parallelism, 1)
		st.ReadyReplicas = job.Status.Active
		wls, err := r.WorkloadsOwnedBy(namespace, "Job", name)
		if err != nil {
			return Status{}, err
		}
		st.Phase, st.Message = jobPhase(job, wls, pods)
	case catalog.KindNotebook:
		sts, err := r.StatefulSet(namespace, name)
		if err != nil {
			return Status{}, err
		}
		st.fromLabels(sts.Labels)
		st.Replicas, st.ReadyReplicas = derefOr(sts.Spec.Replicas, 1), sts.Status.ReadyReplicas
		st.Phase, st.Message = podsPhase(r, namespace, st.Replicas, pods)
	case catalog.KindInference:
		dep, err := r.Deployment(namespace, name)
		if err != nil {
			return Status{}, err
		}
		st.fromLabels(dep.Labels)
		st.Replicas, st.ReadyReplicas = derefOr(dep.Spec.Replicas, 1), dep.Status.ReadyReplicas
		st.Phase, st.Message = podsPhase(r, namespace, st.Replicas, pods)
	default:
		return Status{}, fmt.Errorf("status of %s/%s: unknown kind %q: %w", namespace, name, kind, kube.ErrNotFound)
	}
	return st, nil
}

func (s *Status) fromLabels(l map[string]string) {
	s.Team, s.Owner, s.Template = l[catalog.LabelTeam], l[catalog.LabelOwner], l[catalog.LabelTemplate]
	s.Version, s.Pool = l[catalog.LabelTemplateVersion], l[catalog.LabelPool]
}

func derefOr(p *int32, d int32) int32 {
	if p == nil {
		return d
	}
	return *p
}

func jobPhase(job *batchv1.Job, wls []*kueue.Workload, pods []*corev1.Pod) (string, string) {
	for _, c := range job.Status.Conditions {
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
	for _, p := range pods {
		if p.Status.Phase == corev1.PodRunning {
			return PhaseRunning, ""
		}
	}
	for _, wl := range wls {
		if meta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadAdmitted) {
			return PhaseAdmitted, "Kueue admitted the job; its pods are being scheduled."
		}
		if c := meta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadQuotaReserved); c != nil && c.Status == "False" {
			return PhaseQueued, c.Message
		}
	}
	return PhaseQueued, "Waiting for Kueue to admit the job."
}

func podsPhase(r JobReader, namespace string, replicas int32, pods []*corev1.Pod) (string, string) {
	if replicas == 0 {
		return PhaseStopped, "Stopped: no pods run. Resume to start it again."
	}
	phase, msg := PhaseQueued, "Waiting for Kueue to admit the pods."
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		switch {
		case p.Status.Phase == corev1.PodRunning:
			return PhaseRunning, ""
		case !gated(p):
			phase, msg = PhaseAdmitted, "Kueue admitted the pods; they are being scheduled."
		default:
			if wls, err := r.WorkloadsOwnedBy(namespace, "Pod", p.Name); err == nil {
				for _, wl := range wls {
					if c := meta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadQuotaReserved); c != nil && c.Status == "False" && phase == PhaseQueued {
						msg = c.Message
					}
				}
			}
		}
	}
	return phase, msg
}

func gated(p *corev1.Pod) bool {
	for _, g := range p.Spec.SchedulingGates {
		if g.Name == admissionGate {
			return true
		}
	}
	return false
}
