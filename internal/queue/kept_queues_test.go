package queue

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// listedQueues answers like the cache: a new list of the same objects on
// each call, a new object for a queue that changed.
type listedQueues struct{ cqs []*kueue.ClusterQueue }

func (l *listedQueues) ClusterQueue(name string) (*kueue.ClusterQueue, error) {
	return fakeSource{cqs: l.cqs}.ClusterQueue(name)
}

func (l *listedQueues) ClusterQueues() []*kueue.ClusterQueue { return slices.Clone(l.cqs) }

// The cluster page's queue summaries are made once for the queues as they
// are, and made anew, lending included, when Kueue changes one of them.
func TestKeptQueueSummariesFollowTheQueues(t *testing.T) {
	vision := makeCQ("team-vision", "vision").Cohort("gantry").Flavor("h100", "nvidia.com/gpu", "16").
		Reservation("h100", "nvidia.com/gpu", "4").Usage("h100", "nvidia.com/gpu", "4", "0").Workloads(1, 0, 1).Obj()
	nlp := makeCQ("team-nlp", "nlp").Cohort("gantry").Flavor("h100", "nvidia.com/gpu", "8").Obj()
	src := &listedQueues{cqs: []*kueue.ClusterQueue{nlp, vision}}
	kept := StatusReader{Queues: src, Kept: &KeptQueues{}}
	fresh := StatusReader{Queues: src}

	first := kept.AllQueues()
	require.Len(t, first, 2)
	assert.Equal(t, fresh.AllQueues(), first)
	again := kept.AllQueues()
	assert.Same(t, &first[0], &again[0], "the same queues are summarised once")

	// nlp borrows 6 of vision's unused 12.
	src.cqs[0] = makeCQ("team-nlp", "nlp").Cohort("gantry").Flavor("h100", "nvidia.com/gpu", "8").
		Reservation("h100", "nvidia.com/gpu", "14").Usage("h100", "nvidia.com/gpu", "14", "6").Workloads(0, 0, 3).Obj()
	changed := kept.AllQueues()
	assert.Equal(t, fresh.AllQueues(), changed)
	assert.Equal(t, 3, changed[0].Admitted)
	assert.Equal(t, int64(6), changed[1].Flavors[0].Lent, "vision lends what nlp borrows")
	assert.Equal(t, "team-vision", first[1].ClusterQueue)
	assert.Zero(t, first[1].Flavors[0].Lent, "summaries handed out before stay as they were")
}
