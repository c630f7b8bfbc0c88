package kube

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// indexRunning files Workloads that hold quota by namespace.
const indexRunning = "running"

// NamespaceWorkloads returns the Kueue Workloads of a namespace (a team's
// namespace is team-<name>) from the job cache, sorted by name.
func (c *JobCache) NamespaceWorkloads(namespace string) ([]*kueue.Workload, error) {
	if !c.workloads.HasSynced() {
		return nil, ErrNotSynced
	}
	objs, err := c.workloads.GetIndexer().ByIndex(cache.NamespaceIndex, namespace)
	if err != nil {
		return nil, fmt.Errorf("list workloads of %s from cache: %w", namespace, err)
	}
	return sortedByName[*kueue.Workload](objs), nil
}

// NamespaceRunningWorkloads returns the Workloads of a namespace that hold
// quota and have not finished, sorted by name: the team page prices these
// without walking the team's queued and ended ones.
func (c *JobCache) NamespaceRunningWorkloads(namespace string) ([]*kueue.Workload, error) {
	if !c.workloads.HasSynced() {
		return nil, ErrNotSynced
	}
	objs, err := c.workloads.GetIndexer().ByIndex(indexRunning, namespace)
	if err != nil {
		return nil, fmt.Errorf("list running workloads of %s from cache: %w", namespace, err)
	}
	return sortedByName[*kueue.Workload](objs), nil
}

// AllWorkloads returns every Workload in the cache, in no particular order:
// the cost ledger loop looks at each once a minute, and sorting them by name
// first took a quarter of a CPU-second a pass at 50,000 Workloads.
func (c *JobCache) AllWorkloads() ([]*kueue.Workload, error) {
	if !c.workloads.HasSynced() {
		return nil, ErrNotSynced
	}
	return typed[*kueue.Workload](c.workloads.GetIndexer().List()), nil
}

// WorkloadByUID finds a Workload by UID, for naming who preempted a job. It
// scans the cache, which is only done for preempted jobs.
func (c *JobCache) WorkloadByUID(uid string) (*kueue.Workload, bool) {
	for _, o := range c.workloads.GetIndexer().List() {
		if wl, ok := o.(*kueue.Workload); ok && string(wl.UID) == uid {
			return wl, true
		}
	}
	return nil, false
}

// OnWorkloadChange calls fn with the old and new object of every Workload
// update and with the last known object of every deletion (new is nil), so
// the cost ledger sees runs that end between its scans.
func (c *JobCache) OnWorkloadChange(fn func(old, new *kueue.Workload)) error {
	_, err := c.workloads.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*kueue.Workload)
			n, ok2 := newObj.(*kueue.Workload)
			if ok1 && ok2 {
				fn(o, n)
			}
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if wl, ok := obj.(*kueue.Workload); ok {
				fn(wl, nil)
			}
		},
	})
	if err != nil {
		return fmt.Errorf("watch workloads: %w", err)
	}
	return nil
}

// LocalQueues returns every LocalQueue in the cache, sorted by namespace and name.
func (c *Cache) LocalQueues() []*kueue.LocalQueue {
	return sortedByName[*kueue.LocalQueue](c.localQueues.GetIndexer().List())
}

// runningWorkloadIndex files a Workload under its namespace while it holds
// quota and has not finished: the runs the team page prices as running.
func runningWorkloadIndex(obj any) ([]string, error) {
	wl, ok := obj.(*kueue.Workload)
	if !ok || wl.Status.Admission == nil {
		return nil, nil
	}
	for _, c := range wl.Status.Conditions {
		if c.Type == kueue.WorkloadFinished && c.Status == metav1.ConditionTrue {
			return nil, nil
		}
	}
	return []string{wl.Namespace}, nil
}
