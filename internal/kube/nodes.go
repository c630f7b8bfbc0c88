package kube

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// NodeCache is an informer cache of Node objects, for what the node pools
// physically have.
type NodeCache struct {
	factory informers.SharedInformerFactory
	nodes   cache.SharedIndexInformer
	lister  corelisters.NodeLister
}

// NewNodeCache sets up a Node informer.
func NewNodeCache(client kubernetes.Interface, resync time.Duration) *NodeCache {
	factory := informers.NewSharedInformerFactory(client, resync)
	n := factory.Core().V1().Nodes()
	// SetTransform only fails on a started informer; this one is new.
	_ = n.Informer().SetTransform(trimObject)
	return &NodeCache{factory: factory, nodes: n.Informer(), lister: n.Lister()}
}

// Start runs the informer until ctx is cancelled. It does not block.
func (c *NodeCache) Start(ctx context.Context) {
	c.factory.Start(ctx.Done())
	go func() {
		<-ctx.Done()
		c.factory.Shutdown()
	}()
}

// WaitForSync blocks until the informer has listed once, or ctx ends.
func (c *NodeCache) WaitForSync(ctx context.Context) error {
	if !cache.WaitForCacheSync(ctx.Done(), c.nodes.HasSynced) {
		return fmt.Errorf("wait for node cache sync: %w", context.Cause(ctx))
	}
	return nil
}

// FlavorCapacity sums the allocatable resources of the nodes a
// ResourceFlavor selects (its nodeLabels); a flavor without node labels
// selects no nodes.
func (c *NodeCache) FlavorCapacity(rf *kueue.ResourceFlavor) (corev1.ResourceList, error) {
	if !c.nodes.HasSynced() {
		return nil, ErrNotSynced
	}
	out := corev1.ResourceList{}
	if len(rf.Spec.NodeLabels) == 0 {
		return out, nil
	}
	nodes, err := c.lister.List(labels.SelectorFromSet(rf.Spec.NodeLabels))
	if err != nil {
		return nil, fmt.Errorf("list nodes of flavor %s from cache: %w", rf.Name, err)
	}
	for _, n := range nodes {
		for name, q := range n.Status.Allocatable {
			sum := out[name]
			sum.Add(q)
			out[name] = sum
		}
	}
	return out, nil
}

// ClusterQueues returns every ClusterQueue in the cache, sorted by name.
func (c *Cache) ClusterQueues() []*kueue.ClusterQueue {
	return sortedByName[*kueue.ClusterQueue](c.clusterQueues.GetIndexer().List())
}
