package kube

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

func ownedWorkload(name string, owners ...string) *kueue.Workload {
	wl := &kueue.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name}}
	for _, o := range owners {
		wl.OwnerReferences = append(wl.OwnerReferences, metav1.OwnerReference{Kind: KindJob, Name: o})
	}
	return wl
}

// The Workloads of an owner are found through the index as the informer
// reports them: added, adopted by another owner, listed again, deleted
// (with or without their last state); a key the store no longer holds, or
// whose object changed owner before the index heard, is not returned.
func TestKeyIndexFollowsTheInformersEvents(t *testing.T) {
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	x := newKeyIndex(workloadOwners)
	h := x.handler()
	names := func(owner string) []string {
		var out []string
		for _, obj := range x.objects(store, ownerKey("team-a", KindJob, owner)) {
			out = append(out, obj.(*kueue.Workload).Name)
		}
		return out
	}

	a, b := ownedWorkload("job-a", "a"), ownedWorkload("job-b", "a", "b")
	for _, wl := range []*kueue.Workload{a, b} {
		require.NoError(t, store.Add(wl))
		h.OnAdd(wl, false)
	}
	assert.ElementsMatch(t, []string{"job-a", "job-b"}, names("a"))
	assert.Equal(t, []string{"job-b"}, names("b"))

	// A relist reports what the informer holds as added again.
	h.OnAdd(a, false)
	assert.ElementsMatch(t, []string{"job-a", "job-b"}, names("a"), "filed once")

	// job-b loses owner a.
	b2 := ownedWorkload("job-b", "b")
	require.NoError(t, store.Update(b2))
	h.OnUpdate(b, b2)
	assert.Equal(t, []string{"job-a"}, names("a"))
	assert.Equal(t, []string{"job-b"}, names("b"))

	// Stored before the index hears of it: not returned under its old owner.
	a2 := ownedWorkload("job-a", "c")
	require.NoError(t, store.Update(a2))
	assert.Empty(t, names("a"))
	h.OnUpdate(a, a2)
	assert.Equal(t, []string{"job-a"}, names("c"))

	// Deleted from the store before the handler runs: not returned.
	require.NoError(t, store.Delete(b2))
	assert.Empty(t, names("b"))
	h.OnDelete(cache.DeletedFinalStateUnknown{Key: "team-a/job-b", Obj: b2})
	require.NoError(t, store.Delete(a2))
	h.OnDelete(a2)
	assert.Empty(t, names("c"))
	assert.Empty(t, x.keys, "nothing is left filed")
}
