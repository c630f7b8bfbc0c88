package kube

import (
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// outsideWorkloads files in the job index the workloads Kueue queues that
// Gantry did not launch (a bare Pod made with kubectl, which Kueue's pod
// integration turns into a Workload): Workloads none of whose owners is an
// object of the job cache. Each is listed under its first owner, as the job
// page finds it (launch.Reader.Outside). It is kept in step by the
// informers' events of Workloads and of the owners, so the job list pays
// nothing for it.
type outsideWorkloads struct {
	// mu makes each decision and its filing one step, so that events of
	// a Workload and of its owner, arriving on two goroutines, leave the
	// index as the last decision says.
	mu        sync.Mutex
	index     *JobIndex
	workloads cache.Store
	// owned files the Workloads by owner; workloadHandler keeps it.
	owned *keyIndex
	// owners are the cache's own objects by owner kind.
	owners map[string]cache.Indexer
	// listed is what is filed, by namespace/kind/name of the first owner.
	listed map[string]JobRef
	// gantrys remembers Workloads once seen owned by the portal's objects,
	// so that one outliving its pod (a stopped notebook) is not taken for
	// someone else's.
	gantrys map[string]bool
}

func ownerKey(namespace, kind, name string) string { return namespace + "/" + kind + "/" + name }

func firstOwner(wl *kueue.Workload) (string, bool) {
	if len(wl.OwnerReferences) == 0 {
		return "", false
	}
	ref := wl.OwnerReferences[0]
	return ownerKey(wl.Namespace, ref.Kind, ref.Name), true
}

// isGantrys reports whether one of the Workload's owners is in the cache.
func (o *outsideWorkloads) isGantrys(wl *kueue.Workload) bool {
	if o.gantrys[string(wl.UID)] {
		return true
	}
	for _, ref := range wl.OwnerReferences {
		if idx, ok := o.owners[ref.Kind]; ok {
			if _, found, _ := idx.GetByKey(wl.Namespace + "/" + ref.Name); found {
				o.gantrys[string(wl.UID)] = true
				return true
			}
		}
	}
	return false
}

// refile decides again whether the object named by key (a first owner)
// is an outside workload, and files or unfiles it.
func (o *outsideWorkloads) refile(key string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	objs := o.owned.objects(o.workloads, key)
	var ref JobRef
	found := false
	for _, obj := range objs {
		wl, ok := obj.(*kueue.Workload)
		if !ok {
			continue
		}
		if k, _ := firstOwner(wl); k != key {
			continue
		}
		if o.isGantrys(wl) {
			found = false
			break
		}
		if wl.DeletionTimestamp != nil {
			continue
		}
		if t := wl.CreationTimestamp.UnixNano(); !found || t < ref.Created {
			owner := wl.OwnerReferences[0]
			ref = JobRef{Namespace: wl.Namespace, Name: owner.Name, Kind: owner.Kind, Created: t, Outside: true}
			found = true
		}
	}
	old, had := o.listed[key]
	if had && found && old == ref {
		return
	}
	if had {
		o.index.Remove(old)
		delete(o.listed, key)
	}
	if found {
		o.index.Add(ref)
		o.listed[key] = ref
	}
}

func (o *outsideWorkloads) forget(wl *kueue.Workload) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.gantrys, string(wl.UID))
}

func unwrapDeleted(obj any) any {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return t.Obj
	}
	return obj
}

// workloadHandler files each Workload by owner and refiles its first
// owner, on each of its events.
func (o *outsideWorkloads) workloadHandler() cache.ResourceEventHandler {
	refile := func(obj any) {
		if wl, ok := unwrapDeleted(obj).(*kueue.Workload); ok {
			if key, ok := firstOwner(wl); ok {
				o.refile(key)
			}
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			o.owned.add(obj)
			refile(obj)
		},
		UpdateFunc: func(oldObj, newObj any) {
			o.owned.move(oldObj, newObj)
			ow, ok1 := oldObj.(*kueue.Workload)
			nw, ok2 := newObj.(*kueue.Workload)
			if ok1 && ok2 {
				ko, _ := firstOwner(ow)
				kn, _ := firstOwner(nw)
				if ko != kn && ko != "" {
					o.refile(ko)
				}
			}
			refile(newObj)
		},
		DeleteFunc: func(obj any) {
			o.owned.remove(obj)
			refile(obj)
			if wl, ok := unwrapDeleted(obj).(*kueue.Workload); ok {
				o.forget(wl)
			}
		},
	}
}

// ownerHandler refiles, when one of the cache's own objects of kind comes
// or goes, the first owners of the Workloads it owns.
func (o *outsideWorkloads) ownerHandler(kind string) cache.ResourceEventHandler {
	refile := func(obj any) {
		m, ok := unwrapDeleted(obj).(metav1.Object)
		if !ok {
			return
		}
		key := ownerKey(m.GetNamespace(), kind, m.GetName())
		objs := o.owned.objects(o.workloads, key)
		keys := map[string]bool{key: true}
		for _, obj := range objs {
			if wl, ok := obj.(*kueue.Workload); ok {
				if k, ok := firstOwner(wl); ok {
					keys[k] = true
				}
			}
		}
		for k := range keys {
			o.refile(k)
		}
	}
	return cache.ResourceEventHandlerFuncs{AddFunc: refile, DeleteFunc: refile}
}
