package kube

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	kueueclient "sigs.k8s.io/kueue/client-go/clientset/versioned"
	kueueinformers "sigs.k8s.io/kueue/client-go/informers/externalversions"

	"github.com/gantry-dev/gantry/internal/naming"
)

const (
	indexTeam         = "team"
	indexClusterQueue = "clusterQueue"
)

// Cache is Gantry's read model of Kueue objects, kept current by informers so
// that pages never list the cluster live. Objects it returns are shared with
// the informers and must not be modified.
type Cache struct {
	factory        kueueinformers.SharedInformerFactory
	clusterQueues  cache.SharedIndexInformer
	localQueues    cache.SharedIndexInformer
	resourceFlavor cache.SharedIndexInformer
}

// NewCache sets up informers for ClusterQueues, LocalQueues and
// ResourceFlavors with indexes by team label and by ClusterQueue. resync 0
// disables periodic resync; watches still deliver every change.
func NewCache(client kueueclient.Interface, resync time.Duration) (*Cache, error) {
	factory := kueueinformers.NewSharedInformerFactory(client, resync)
	v1 := factory.Kueue().V1beta2()
	c := &Cache{
		factory:        factory,
		clusterQueues:  v1.ClusterQueues().Informer(),
		localQueues:    v1.LocalQueues().Informer(),
		resourceFlavor: v1.ResourceFlavors().Informer(),
	}
	for name, inf := range map[string]cache.SharedIndexInformer{"clusterqueues": c.clusterQueues, "localqueues": c.localQueues,
		"resourceflavors": c.resourceFlavor} {
		if err := inf.SetTransform(trimObject); err != nil {
			return nil, fmt.Errorf("trim %s: %w", name, err)
		}
	}
	if err := c.clusterQueues.AddIndexers(cache.Indexers{indexTeam: teamIndex}); err != nil {
		return nil, fmt.Errorf("index cluster queues by team: %w", err)
	}
	if err := c.localQueues.AddIndexers(cache.Indexers{
		indexTeam:         teamIndex,
		indexClusterQueue: localQueueClusterQueueIndex,
	}); err != nil {
		return nil, fmt.Errorf("index local queues: %w", err)
	}
	return c, nil
}

// Start runs the informers until ctx is cancelled. It does not block.
func (c *Cache) Start(ctx context.Context) {
	c.factory.Start(ctx.Done())
	go func() {
		<-ctx.Done()
		c.factory.Shutdown()
	}()
}

// WaitForSync blocks until every informer has listed once, or ctx ends.
func (c *Cache) WaitForSync(ctx context.Context) error {
	if !cache.WaitForCacheSync(ctx.Done(), c.HasSynced) {
		return fmt.Errorf("wait for kueue cache sync: %w", context.Cause(ctx))
	}
	return nil
}

// HasSynced reports whether every informer has completed its first list.
func (c *Cache) HasSynced() bool {
	return c.clusterQueues.HasSynced() && c.localQueues.HasSynced() && c.resourceFlavor.HasSynced()
}

// ClusterQueue returns the named ClusterQueue, or an error matching ErrNotFound.
func (c *Cache) ClusterQueue(name string) (*kueue.ClusterQueue, error) {
	obj, ok, err := c.clusterQueues.GetIndexer().GetByKey(name)
	if err != nil {
		return nil, fmt.Errorf("get cluster queue %s from cache: %w", name, err)
	}
	if !ok {
		return nil, notFound("clusterqueues", name)
	}
	return obj.(*kueue.ClusterQueue), nil
}

// TeamClusterQueues returns the ClusterQueues labelled with the team, sorted by name.
func (c *Cache) TeamClusterQueues(team string) ([]*kueue.ClusterQueue, error) {
	objs, err := c.clusterQueues.GetIndexer().ByIndex(indexTeam, team)
	if err != nil {
		return nil, fmt.Errorf("list cluster queues of team %s from cache: %w", team, err)
	}
	return sortedByName[*kueue.ClusterQueue](objs), nil
}

// LocalQueuesFor returns the LocalQueues that submit to the named
// ClusterQueue, sorted by namespace and name.
func (c *Cache) LocalQueuesFor(clusterQueue string) ([]*kueue.LocalQueue, error) {
	objs, err := c.localQueues.GetIndexer().ByIndex(indexClusterQueue, clusterQueue)
	if err != nil {
		return nil, fmt.Errorf("list local queues of cluster queue %s from cache: %w", clusterQueue, err)
	}
	return sortedByName[*kueue.LocalQueue](objs), nil
}

// TeamLocalQueues returns the LocalQueues labelled with the team, sorted by
// namespace and name.
func (c *Cache) TeamLocalQueues(team string) ([]*kueue.LocalQueue, error) {
	objs, err := c.localQueues.GetIndexer().ByIndex(indexTeam, team)
	if err != nil {
		return nil, fmt.Errorf("list local queues of team %s from cache: %w", team, err)
	}
	return sortedByName[*kueue.LocalQueue](objs), nil
}

// ResourceFlavor returns the named ResourceFlavor, or an error matching ErrNotFound.
func (c *Cache) ResourceFlavor(name string) (*kueue.ResourceFlavor, error) {
	obj, ok, err := c.resourceFlavor.GetIndexer().GetByKey(name)
	if err != nil {
		return nil, fmt.Errorf("get resource flavor %s from cache: %w", name, err)
	}
	if !ok {
		return nil, notFound("resourceflavors", name)
	}
	return obj.(*kueue.ResourceFlavor), nil
}

// ResourceFlavors returns every ResourceFlavor, sorted by name.
func (c *Cache) ResourceFlavors() []*kueue.ResourceFlavor {
	return sortedByName[*kueue.ResourceFlavor](c.resourceFlavor.GetIndexer().List())
}

func notFound(resource, name string) error {
	gr := kueue.GroupVersion.WithResource(resource).GroupResource()
	return MapError(apierrors.NewNotFound(gr, name))
}

type namedObject interface {
	GetNamespace() string
	GetName() string
}

func sortedByName[T namedObject](objs []any) []T {
	out := typed[T](objs)
	slices.SortFunc(out, func(a, b T) int {
		if c := strings.Compare(a.GetNamespace(), b.GetNamespace()); c != 0 {
			return c
		}
		return strings.Compare(a.GetName(), b.GetName())
	})
	return out
}

func teamIndex(obj any) ([]string, error) {
	o, ok := obj.(interface{ GetLabels() map[string]string })
	if !ok {
		return nil, nil
	}
	if team := o.GetLabels()[naming.LabelTeam]; team != "" {
		return []string{team}, nil
	}
	return nil, nil
}

func localQueueClusterQueueIndex(obj any) ([]string, error) {
	lq, ok := obj.(*kueue.LocalQueue)
	if !ok || lq.Spec.ClusterQueue == "" {
		return nil, nil
	}
	return []string{string(lq.Spec.ClusterQueue)}, nil
}
