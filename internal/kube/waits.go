package kube

import (
	"context"
	"fmt"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	kueueclient "sigs.k8s.io/kueue/client-go/clientset/versioned"
	kueueinformers "sigs.k8s.io/kueue/client-go/informers/externalversions"
)

// WaitCache is an informer cache of Kueue Workloads for how long a
// namespace's workloads have been waiting for quota.
type WaitCache struct {
	factory   kueueinformers.SharedInformerFactory
	workloads cache.SharedIndexInformer
}

// NewWaitCache sets up a Workload informer indexed by namespace.
func NewWaitCache(client kueueclient.Interface, resync time.Duration) *WaitCache {
	factory := kueueinformers.NewSharedInformerFactory(client, resync)
	return &WaitCache{factory: factory, workloads: factory.Kueue().V1beta2().Workloads().Informer()}
}

// Start runs the informer until ctx is cancelled. It does not block.
func (c *WaitCache) Start(ctx context.Context) {
	c.factory.Start(ctx.Done())
	go func() {
		<-ctx.Done()
		c.factory.Shutdown()
	}()
}

// WaitForSync blocks until the informer has listed once, or ctx ends.
func (c *WaitCache) WaitForSync(ctx context.Context) error {
	if !cache.WaitForCacheSync(ctx.Done(), c.workloads.HasSynced) {
		return fmt.Errorf("wait for workload cache sync: %w", context.Cause(ctx))
	}
	return nil
}

// LongestWait is how long the namespace's oldest workload still waiting
// for quota has waited at now; zero when none waits.
func (c *WaitCache) LongestWait(namespace string, now time.Time) (time.Duration, error) {
	if !c.workloads.HasSynced() {
		return 0, ErrNotSynced
	}
	objs, err := c.workloads.GetIndexer().ByIndex(cache.NamespaceIndex, namespace)
	if err != nil {
		return 0, fmt.Errorf("list workloads of %s from cache: %w", namespace, err)
	}
	var longest time.Duration
	for _, o := range objs {
		wl, ok := o.(*kueue.Workload)
		if !ok || apimeta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadQuotaReserved) ||
			apimeta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadFinished) {
			continue
		}
		if w := now.Sub(wl.CreationTimestamp.Time); w > longest {
			longest = w
		}
	}
	return longest, nil
}
