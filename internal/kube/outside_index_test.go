package kube

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

func podWorkload(ns, name, pod string, created time.Time) *kueue.Workload {
	return &kueue.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(name), CreationTimestamp: metav1.NewTime(created),
		OwnerReferences: []metav1.OwnerReference{{Kind: "Pod", Name: pod}}}}
}

// A Workload whose owner is not one of the cache's objects (a bare pod made
// with kubectl) is in the job list, marked outside, whichever of the
// Workload and the pod the informers report first; one owned by a portal
// pod is not, not even after that pod is gone; a deleted one leaves the list.
func TestOutsideWorkloadsAreListedFromInformerEvents(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	workloads := cache.NewStore(cache.MetaNamespaceKeyFunc)
	pods := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	o := &outsideWorkloads{index: NewJobIndex(), workloads: workloads, owned: newKeyIndex(workloadOwners), owners: map[string]cache.Indexer{"Pod": pods},
		listed: map[string]JobRef{}, gantrys: map[string]bool{}}
	wh, ph := o.workloadHandler(), o.ownerHandler("Pod")
	page := func() []JobRef {
		refs, _ := o.index.Page(JobQuery{Namespaces: []string{"team-a"}, Limit: 10})
		return refs
	}

	bare := podWorkload("team-a", "pod-bare-1", "bare", t0)
	require.NoError(t, workloads.Add(bare))
	wh.OnAdd(bare, false)
	want := []JobRef{{Namespace: "team-a", Name: "bare", Kind: "Pod", Created: t0.UnixNano(), Outside: true}}
	require.Empty(t, cmp.Diff(want, page()), "a kubectl pod's Workload is listed")

	// The portal's pod: its Workload arrives before the pod, then the pod.
	ours := podWorkload("team-a", "pod-nb-0", "nb-0", t0.Add(time.Minute))
	require.NoError(t, workloads.Add(ours))
	wh.OnAdd(ours, false)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "nb-0"}}
	require.NoError(t, pods.Add(pod))
	ph.OnAdd(pod, false)
	require.Empty(t, cmp.Diff(want, page()), "a portal pod's Workload is not listed once the pod is known")
	require.NoError(t, pods.Delete(pod))
	ph.OnDelete(pod)
	require.Empty(t, cmp.Diff(want, page()), "nor after its pod is gone")

	require.NoError(t, workloads.Delete(bare))
	wh.OnDelete(cache.DeletedFinalStateUnknown{Key: "team-a/pod-bare-1", Obj: bare})
	require.Empty(t, page(), "a deleted Workload leaves the list")
}

// Kueue makes a Job's Workload within the Job's second, and the two
// informers may report the Workload first: it is filed as outside until
// the Job arrives. The Job stays listed, once, whichever of the job index
// and the outside refiling handles the Job's arrival first.
func TestJobWhoseWorkloadArrivedFirstStaysListedOnce(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	for _, indexFirst := range []bool{true, false} {
		workloads := cache.NewStore(cache.MetaNamespaceKeyFunc)
		jobs := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
		index := NewJobIndex()
		o := &outsideWorkloads{index: index, workloads: workloads, owned: newKeyIndex(workloadOwners), owners: map[string]cache.Indexer{KindJob: jobs},
			listed: map[string]JobRef{}, gantrys: map[string]bool{}}
		wl := &kueue.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "job-train-1-abcde", UID: "wl-1",
			CreationTimestamp: metav1.NewTime(t0), OwnerReferences: []metav1.OwnerReference{{Kind: KindJob, Name: "train-1"}}}}
		require.NoError(t, workloads.Add(wl))
		o.workloadHandler().OnAdd(wl, false)

		job := indexedJob("team-a", "train-1", "alice", t0)
		require.NoError(t, jobs.Add(job))
		if indexFirst {
			index.handler().OnAdd(job, false)
			o.ownerHandler(KindJob).OnAdd(job, false)
		} else {
			o.ownerHandler(KindJob).OnAdd(job, false)
			index.handler().OnAdd(job, false)
		}
		refs, total := index.Page(JobQuery{Namespaces: []string{"team-a"}, Limit: 10})
		want := []JobRef{{Namespace: "team-a", Name: "train-1", Kind: KindJob, Owner: "alice", Created: t0.UnixNano()}}
		require.Empty(t, cmp.Diff(want, refs), "job index first: %v", indexFirst)
		require.Equal(t, 1, total)
	}
}
