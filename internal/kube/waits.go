package kube

import (
	"fmt"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// LongestWait is how long the namespace's oldest workload still waiting
// for quota has waited at now; zero when none waits. It reads the job
// cache's one Workload informer, which holds every Workload of the cluster.
func (c *JobCache) LongestWait(namespace string, now time.Time) (time.Duration, error) {
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
