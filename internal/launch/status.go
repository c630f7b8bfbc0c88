package launch

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/gantry-dev/gantry/internal/catalog"
	"github.com/gantry-dev/gantry/internal/kube"
	"github.com/gantry-dev/gantry/internal/naming"
	"github.com/gantry-dev/gantry/internal/queue"
)

// PodStatus is one pod of a job.
type PodStatus struct {
	Name, Phase, Node, Pool string
}

// Status is a job's state from the informer cache.
type Status struct {
	Name, Namespace, Team, Owner, Template, Version, Pool string
	Kind                                                  catalog.Kind
	// Phase comes from queue.PhaseOf, as on the job page and in the API.
	Phase queue.Phase
	// Message is Kueue's or Kubernetes' own words about the phase.
	Message                 string
	Replicas, ReadyReplicas int32
	Pods                    []PodStatus
	// Outside is true for a workload created in the team's namespace
	// without the portal (kubectl): no launch record, template or owner.
	Outside bool
}

// JobReader is the part of the job cache status needs.
type JobReader interface {
	JobState(namespace, name string) (kube.JobState, error)
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
		st.Pods = append(st.Pods, PodStatus{Name: p.Name, Phase: string(p.Status.Phase), Node: p.Spec.NodeName, Pool: p.Spec.NodeSelector[naming.LabelPool]})
	}
	switch kind {
	case catalog.KindTraining:
		js, err := r.JobState(namespace, name)
		if err != nil {
			return Status{}, err
		}
		st.fromLabels(js.Labels)
		st.Replicas = derefOr(js.Parallelism, 1)
		st.ReadyReplicas = js.Active
		wls, err := r.WorkloadsOwnedBy(namespace, "Job", name)
		if err != nil {
			return Status{}, err
		}
		// PhaseOf reads the Job's conditions only; this one stays on the stack.
		job := batchv1.Job{Status: batchv1.JobStatus{Conditions: js.Conditions}}
		st.Phase, st.Message = queue.PhaseOf(queue.StatusInput{Workloads: wls, Pods: pods, Job: &job})
	case catalog.KindNotebook:
		sts, err := r.StatefulSet(namespace, name)
		if err != nil {
			return Status{}, err
		}
		st.fromLabels(sts.Labels)
		st.Replicas, st.ReadyReplicas = derefOr(sts.Spec.Replicas, 1), sts.Status.ReadyReplicas
		st.Phase, st.Message, err = podsPhase(r, namespace, st.Replicas, pods)
		if err != nil {
			return Status{}, err
		}
	case catalog.KindInference:
		dep, err := r.Deployment(namespace, name)
		if err != nil {
			return Status{}, err
		}
		st.fromLabels(dep.Labels)
		st.Replicas, st.ReadyReplicas = derefOr(dep.Spec.Replicas, 1), dep.Status.ReadyReplicas
		st.Phase, st.Message, err = podsPhase(r, namespace, st.Replicas, pods)
		if err != nil {
			return Status{}, err
		}
	default:
		return Status{}, fmt.Errorf("status of %s/%s: unknown kind %q: %w", namespace, name, kind, kube.ErrNotFound)
	}
	return st, nil
}

func (s *Status) fromLabels(l map[string]string) {
	s.Team, s.Owner, s.Template = l[naming.LabelTeam], l[naming.LabelOwner], l[naming.LabelTemplate]
	s.Version, s.Pool = l[naming.LabelTemplateVersion], l[naming.LabelPool]
}

func derefOr(p *int32, d int32) int32 {
	if p == nil {
		return d
	}
	return *p
}

// podsPhase is the phase of a notebook or endpoint, whose pods Kueue
// admits one Workload each.
func podsPhase(r JobReader, namespace string, replicas int32, pods []*corev1.Pod) (queue.Phase, string, error) {
	in := queue.StatusInput{Pods: pods, Stopped: replicas == 0}
	wls, err := PodWorkloads(r, namespace, pods)
	if err != nil {
		return "", "", err
	}
	in.Workloads = wls
	phase, msg := queue.PhaseOf(in)
	return phase, msg, nil
}

// PodWorkloads are the Kueue Workloads of a notebook's or endpoint's pods.
func PodWorkloads(r interface {
	WorkloadsOwnedBy(namespace, kind, name string) ([]*kueue.Workload, error)
}, namespace string, pods []*corev1.Pod) ([]*kueue.Workload, error) {
	var out []*kueue.Workload
	for _, p := range pods {
		owned, err := r.WorkloadsOwnedBy(namespace, "Pod", p.Name)
		if err != nil {
			return nil, fmt.Errorf("workloads of pod %s/%s: %w", namespace, p.Name, err)
		}
		out = append(out, owned...)
	}
	return out, nil
}
