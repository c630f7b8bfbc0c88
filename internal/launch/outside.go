package launch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/gantry-dev/gantry/internal/catalog"
	"github.com/gantry-dev/gantry/internal/kube"
	"github.com/gantry-dev/gantry/internal/naming"
	"github.com/gantry-dev/gantry/internal/queue"
	"github.com/gantry-dev/gantry/internal/store"
)

// NamespaceWorkloadLister lists a namespace's Kueue Workloads and finds
// pods; the job cache does both. Without it (as in tests with a stub cache)
// the job list shows no workloads created outside Gantry.
type NamespaceWorkloadLister interface {
	NamespaceWorkloads(namespace string) ([]*kueue.Workload, error)
	PodByName(namespace, name string) (*corev1.Pod, error)
}

// outsideObject is a workload created in a team namespace without the
// portal (kubectl, another tool): the owner of its Kueue Workloads, named
// and dated as that owner.
type outsideObject struct {
	metav1.ObjectMeta
	ownerKind string
	workloads []*kueue.Workload
}

// outsideJobs are the workloads Kueue queues in the team's namespace that
// Gantry did not launch: Workloads whose owner is not one of the portal's
// objects. Their pods are not in the job cache (it holds Gantry's only), so
// they are known by their Workloads.
func (r Reader) outsideJobs(team string) ([]*outsideObject, error) {
	src, ok := r.Jobs.(NamespaceWorkloadLister)
	if !ok {
		return nil, nil
	}
	ns := naming.Namespace(team)
	wls, err := src.NamespaceWorkloads(ns)
	if err != nil {
		return nil, err
	}
	byOwner := map[string]*outsideObject{}
	var out []*outsideObject
	for _, wl := range wls {
		kind, name, ok := ownerOf(wl)
		if !ok || wl.DeletionTimestamp != nil || r.isGantrys(src, ns, kind, name) {
			continue
		}
		o := byOwner[kind+"/"+name]
		if o == nil {
			o = &outsideObject{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, CreationTimestamp: wl.CreationTimestamp}, ownerKind: kind}
			byOwner[kind+"/"+name] = o
			out = append(out, o)
		}
		if wl.CreationTimestamp.Before(&o.CreationTimestamp) {
			o.CreationTimestamp = wl.CreationTimestamp
		}
		o.workloads = append(o.workloads, wl)
	}
	return out, nil
}

func ownerOf(wl *kueue.Workload) (kind, name string, ok bool) {
	for _, ref := range wl.OwnerReferences {
		return ref.Kind, ref.Name, true
	}
	return "", "", false
}

// isGantrys reports whether the owner is an object the portal launched
// (a Job of the job cache, or a pod of one of its notebooks or endpoints).
func (r Reader) isGantrys(src NamespaceWorkloadLister, ns, kind, name string) bool {
	switch kind {
	case "Job":
		_, err := r.Jobs.JobState(ns, name)
		return err == nil || !errors.Is(err, kube.ErrNotFound)
	case "Pod":
		_, err := src.PodByName(ns, name)
		return err == nil || !errors.Is(err, kube.ErrNotFound)
	}
	return false
}

// outsideKind is the kind an outside workload shows as: a batch Job is
// training, other owners by their own kind.
func outsideKind(ownerKind string) catalog.Kind {
	if ownerKind == "Job" {
		return catalog.KindTraining
	}
	return catalog.Kind(strings.ToLower(ownerKind))
}

func outsideStatus(team string, o *outsideObject) Status {
	st := Status{Name: o.Name, Namespace: o.Namespace, Team: team, Kind: outsideKind(o.ownerKind), Outside: true, Replicas: 1}
	st.Phase, st.Message = queue.PhaseOf(queue.StatusInput{Workloads: o.workloads})
	for _, wl := range o.workloads {
		for _, ps := range wl.Spec.PodSets {
			if p := ps.Template.Spec.NodeSelector[naming.LabelPool]; p != "" {
				st.Pool = p
			}
		}
	}
	return st
}

// outsideStatusOf is the status of a job-index entry for a workload made
// outside Gantry, from the Workloads its owner has; false when they are gone.
func outsideStatusOf(r JobReader, team string, ref kube.JobRef) (Status, bool) {
	wls, err := r.WorkloadsOwnedBy(ref.Namespace, ref.Kind, ref.Name)
	if err != nil {
		return Status{}, false
	}
	o := &outsideObject{ObjectMeta: metav1.ObjectMeta{Name: ref.Name, Namespace: ref.Namespace}, ownerKind: ref.Kind}
	for _, wl := range wls {
		if kind, name, ok := ownerOf(wl); ok && kind == ref.Kind && name == ref.Name && wl.DeletionTimestamp == nil {
			o.workloads = append(o.workloads, wl)
		}
	}
	if len(o.workloads) == 0 {
		return Status{}, false // deleted between list and get
	}
	return outsideStatus(team, o), true
}

// Outside finds a workload created in the team's namespace without the
// portal: its status, and a stand-in launch record (ID 0, no template)
// for the job page. It returns store.ErrNotFound when there is none.
func (r Reader) Outside(team, name string) (store.Launch, Status, error) {
	// Jobs, StatefulSets and Deployments made with kubectl carry Gantry's
	// labels (the admission policy requires them), so the job cache has
	// them: without a launch record they were made outside the portal.
	for _, kind := range []catalog.Kind{catalog.KindTraining, catalog.KindNotebook, catalog.KindInference} {
		st, err := StatusOf(r.Jobs, naming.Namespace(team), name, kind)
		if errors.Is(err, kube.ErrNotFound) {
			continue
		}
		if err != nil {
			return store.Launch{}, Status{}, err
		}
		st.Team, st.Outside = team, true
		rec := store.Launch{Team: team, Namespace: st.Namespace, Name: name, Kind: string(kind), Owner: st.Owner, Template: st.Template,
			Parameters: []byte("{}")}
		return rec, st, nil
	}
	objs, err := r.outsideJobs(team)
	if err != nil {
		return store.Launch{}, Status{}, err
	}
	i := slices.IndexFunc(objs, func(o *outsideObject) bool { return o.Name == name })
	if i < 0 {
		return store.Launch{}, Status{}, fmt.Errorf("workload %s of team %s: %w", name, team, store.ErrNotFound)
	}
	o := objs[i]
	st := outsideStatus(team, o)
	rec := store.Launch{Team: team, Namespace: o.Namespace, Name: o.Name, Kind: string(st.Kind), CreatedAt: o.CreationTimestamp.Time,
		Parameters: []byte("{}")}
	return rec, st, nil
}

// Launched is the store's answer to which workloads have a launch record.
type Launched interface {
	Launched(ctx context.Context, names []store.WorkloadName) (map[store.WorkloadName]bool, error)
}

// MarkOutside marks the statuses of jobs without a launch record (made
// with kubectl) as made outside the portal: one query for the whole page.
func (r Reader) MarkOutside(ctx context.Context, sts []Status) error {
	src, ok := r.Records.(Launched)
	if !ok {
		return nil
	}
	var names []store.WorkloadName
	for _, st := range sts {
		if !st.Outside {
			names = append(names, store.WorkloadName{Namespace: st.Namespace, Name: st.Name})
		}
	}
	known, err := src.Launched(ctx, names)
	if err != nil {
		return err
	}
	for i := range sts {
		if !known[store.WorkloadName{Namespace: sts[i].Namespace, Name: sts[i].Name}] {
			sts[i].Outside = true
		}
	}
	return nil
}

// IsOutside reports whether a launch record is Outside's stand-in for a
// workload the portal did not launch.
func IsOutside(rec store.Launch) bool { return rec.ID == 0 && rec.LaunchID == "" }
