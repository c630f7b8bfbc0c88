package kube

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	kueueclient "sigs.k8s.io/kueue/client-go/clientset/versioned"
	kueueinformers "sigs.k8s.io/kueue/client-go/informers/externalversions"

	"github.com/gantry-dev/gantry/internal/naming"
)

// Indexes of the job cache.
const (
	indexInstance = "instance"
)

// JobCache is the read model of the workloads Gantry launched: Jobs,
// StatefulSets, Deployments and their Pods (only objects labelled
// app.kubernetes.io/managed-by=gantry), and Kueue Workloads, indexed by
// team, by instance (the launch's object name) and Workloads by owner.
// Objects it returns are shared with the informers and must not be modified.
type JobCache struct {
	core         informers.SharedInformerFactory
	kueue        kueueinformers.SharedInformerFactory
	jobs         cache.SharedIndexInformer
	statefulSets cache.SharedIndexInformer
	deployments  cache.SharedIndexInformer
	pods         cache.SharedIndexInformer
	workloads    cache.SharedIndexInformer
	// index orders the launched objects for the job list; indexed tells
	// whether it has seen every object of the informers' first lists.
	index   *JobIndex
	indexed []cache.ResourceEventHandlerRegistration
	// owned files Workloads by owner; the handler that lists outside
	// Workloads keeps it, before it decides on each Workload's event.
	owned *keyIndex
}

// NewJobCache sets up the informers; call Start and WaitForSync.
func NewJobCache(kube kubernetes.Interface, kq kueueclient.Interface, resync time.Duration) (*JobCache, error) {
	core := informers.NewSharedInformerFactoryWithOptions(kube, resync, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.LabelSelector = naming.LabelManagedBy + "=" + naming.ManagedBy
	}))
	kf := kueueinformers.NewSharedInformerFactory(kq, resync)
	c := &JobCache{
		core:         core,
		kueue:        kf,
		jobs:         core.Batch().V1().Jobs().Informer(),
		statefulSets: core.Apps().V1().StatefulSets().Informer(),
		deployments:  core.Apps().V1().Deployments().Informer(),
		pods:         core.Core().V1().Pods().Informer(),
		workloads:    kf.Kueue().V1beta2().Workloads().Informer(),
		index:        NewJobIndex(),
		owned:        newKeyIndex(workloadOwners),
	}
	// Only the indexes pages read: a launch's pods by its instance, the
	// running Workloads, and (c.owned, kept by the handler below) a
	// Workload by its owner. Jobs, StatefulSets and
	// Deployments are found by name and listed from the job index; indexes
	// of them and of pods by team, and of them by instance (a set per
	// launch), were 10 of the caches' 82 MiB in BenchmarkSeededCaches, and
	// no page read them.
	if err := c.pods.AddIndexers(cache.Indexers{indexInstance: instanceIndex}); err != nil {
		return nil, fmt.Errorf("index pods by instance: %w", err)
	}
	if err := c.workloads.AddIndexers(cache.Indexers{indexRunning: runningWorkloadIndex}); err != nil {
		return nil, fmt.Errorf("index running workloads: %w", err)
	}
	shared := newSharedMaps()
	for name, inf := range map[string]cache.SharedIndexInformer{"jobs": c.jobs, "statefulsets": c.statefulSets,
		"deployments": c.deployments, "pods": c.pods, "workloads": c.workloads} {
		if err := inf.SetTransform(shared.trimJobCacheObject); err != nil {
			return nil, fmt.Errorf("trim %s: %w", name, err)
		}
	}
	for name, inf := range map[string]cache.SharedIndexInformer{"jobs": c.jobs, "statefulsets": c.statefulSets, "deployments": c.deployments} {
		reg, err := inf.AddEventHandler(c.index.handler())
		if err != nil {
			return nil, fmt.Errorf("order %s for the job list: %w", name, err)
		}
		c.indexed = append(c.indexed, reg)
	}
	outside := &outsideWorkloads{index: c.index, workloads: c.workloads.GetStore(), owned: c.owned, listed: map[string]JobRef{}, gantrys: map[string]bool{},
		owners: map[string]cache.Indexer{KindJob: c.jobs.GetIndexer(), KindStatefulSet: c.statefulSets.GetIndexer(),
			KindDeployment: c.deployments.GetIndexer(), "Pod": c.pods.GetIndexer()}}
	for kind, inf := range map[string]cache.SharedIndexInformer{KindJob: c.jobs, KindStatefulSet: c.statefulSets,
		KindDeployment: c.deployments, "Pod": c.pods} {
		reg, err := inf.AddEventHandler(outside.ownerHandler(kind))
		if err != nil {
			return nil, fmt.Errorf("follow %s owners for the job list: %w", kind, err)
		}
		c.indexed = append(c.indexed, reg)
	}
	reg, err := c.workloads.AddEventHandler(outside.workloadHandler())
	if err != nil {
		return nil, fmt.Errorf("list workloads created outside Gantry: %w", err)
	}
	c.indexed = append(c.indexed, reg)
	return c, nil
}

// trimObject drops what no page reads before an object enters a cache:
// managedFields and kubectl's last-applied copy of the whole object are most
// of a Job's or Workload's size. (Nodes have trimNode.)
func trimObject(obj any) (any, error) {
	if o, ok := obj.(metav1.Object); ok {
		trimMeta(o, nil)
	}
	trimSpec(obj)
	return obj, nil
}

// trimMeta drops managedFields and the last-applied copy, and keeps the
// labels keepLabel tells (every one when nil), interned.
func trimMeta(o metav1.Object, keepLabel func(string) bool) {
	o.SetManagedFields(nil)
	if a := o.GetAnnotations(); a != nil {
		delete(a, corev1.LastAppliedConfigAnnotation)
	}
	o.SetLabels(keepKeys(o.GetLabels(), keepLabel))
}

// Start runs the informers until ctx is cancelled. It does not block.
func (c *JobCache) Start(ctx context.Context) {
	c.core.Start(ctx.Done())
	c.kueue.Start(ctx.Done())
	go func() {
		<-ctx.Done()
		c.core.Shutdown()
		c.kueue.Shutdown()
	}()
}

// HasSynced reports whether every informer has completed its first list.
func (c *JobCache) HasSynced() bool {
	for _, reg := range c.indexed {
		if !reg.HasSynced() {
			return false
		}
	}
	return c.jobs.HasSynced() && c.statefulSets.HasSynced() && c.deployments.HasSynced() &&
		c.pods.HasSynced() && c.workloads.HasSynced()
}

// JobRefs returns the page of launched workloads q asks for, newest first,
// and how many match q on every page, from an index kept in the job list's
// order (the cost of a page is its length, not the number of jobs).
func (c *JobCache) JobRefs(q JobQuery) ([]JobRef, int, error) {
	if !c.HasSynced() {
		return nil, 0, ErrNotSynced
	}
	refs, total := c.index.Page(q)
	return refs, total, nil
}

// WaitForSync blocks until every informer has listed once, or ctx ends.
func (c *JobCache) WaitForSync(ctx context.Context) error {
	if !cache.WaitForCacheSync(ctx.Done(), c.HasSynced) {
		return fmt.Errorf("wait for job cache sync: %w", context.Cause(ctx))
	}
	return nil
}

func typed[T any](objs []any) []T {
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		if t, ok := o.(T); ok {
			out = append(out, t)
		}
	}
	return out
}

// Job returns the named batch Job, or an error matching ErrNotFound.
func (c *JobCache) Job(namespace, name string) (*batchv1.Job, error) {
	j, err := getFrom[*cachedJob](c, c.jobs, batchv1.Resource("jobs"), namespace, name)
	if err != nil {
		return nil, err
	}
	return j.job(), nil
}

// JobState returns what a status reads of the named batch Job, or an
// error matching ErrNotFound.
func (c *JobCache) JobState(namespace, name string) (JobState, error) {
	j, err := getFrom[*cachedJob](c, c.jobs, batchv1.Resource("jobs"), namespace, name)
	if err != nil {
		return JobState{}, err
	}
	return j.state(), nil
}

// StatefulSet returns the named StatefulSet, or an error matching ErrNotFound.
func (c *JobCache) StatefulSet(namespace, name string) (*appsv1.StatefulSet, error) {
	return getFrom[*appsv1.StatefulSet](c, c.statefulSets, appsv1.Resource("statefulsets"), namespace, name)
}

// Deployment returns the named Deployment, or an error matching ErrNotFound.
func (c *JobCache) Deployment(namespace, name string) (*appsv1.Deployment, error) {
	return getFrom[*appsv1.Deployment](c, c.deployments, appsv1.Resource("deployments"), namespace, name)
}

// Pods returns the pods of the launch whose objects are named instance.
func (c *JobCache) Pods(namespace, instance string) ([]*corev1.Pod, error) {
	objs, err := c.pods.GetIndexer().ByIndex(indexInstance, namespace+"/"+instance)
	if err != nil {
		return nil, fmt.Errorf("list pods of %s/%s from cache: %w", namespace, instance, err)
	}
	return sortedByName[*corev1.Pod](objs), nil
}

// WorkloadsOwnedBy returns the Kueue Workloads owned by the named object
// (a Job, or a Pod for StatefulSets and Deployments).
func (c *JobCache) WorkloadsOwnedBy(namespace, kind, name string) ([]*kueue.Workload, error) {
	return sortedByName[*kueue.Workload](c.owned.objects(c.workloads.GetStore(), ownerKey(namespace, kind, name))), nil
}

func getFrom[T any](c *JobCache, inf cache.SharedIndexInformer, resource schema.GroupResource, namespace, name string) (T, error) {
	var zero T
	if !c.HasSynced() {
		return zero, ErrNotSynced
	}
	obj, ok, err := inf.GetIndexer().GetByKey(namespace + "/" + name)
	if err != nil {
		return zero, fmt.Errorf("get %s %s/%s from cache: %w", resource, namespace, name, err)
	}
	if !ok {
		return zero, &APIError{Kind: ErrNotFound, Err: fmt.Errorf("%s %s/%s not found", resource, namespace, name)}
	}
	return obj.(T), nil
}

func instanceIndex(obj any) ([]string, error) {
	o, ok := obj.(metav1.Object)
	if !ok {
		return nil, nil
	}
	if v := o.GetLabels()[naming.LabelInstance]; v != "" {
		return []string{o.GetNamespace() + "/" + v}, nil
	}
	return nil, nil
}

// workloadOwners are the owners a Workload is filed under in JobCache.owned.
func workloadOwners(obj any) []string {
	wl, ok := obj.(*kueue.Workload)
	if !ok {
		return nil
	}
	out := make([]string, 0, len(wl.OwnerReferences))
	for _, ref := range wl.OwnerReferences {
		out = append(out, ownerKey(wl.Namespace, ref.Kind, ref.Name))
	}
	return out
}
