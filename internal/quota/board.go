package quota

import (
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/gantry-dev/gantry/internal/kube"
	"github.com/gantry-dev/gantry/internal/naming"
	"github.com/gantry-dev/gantry/internal/queue"
	"github.com/gantry-dev/gantry/internal/teams"
)

// ClusterReader is the informer cache the board reads; pages never list
// the cluster live.
type ClusterReader interface {
	ClusterQueue(name string) (*kueue.ClusterQueue, error)
	ClusterQueues() []*kueue.ClusterQueue
	ResourceFlavor(name string) (*kueue.ResourceFlavor, error)
	ResourceFlavors() []*kueue.ResourceFlavor
}

// Board explains a quota line to the person deciding: the team's quota
// and usage, the cohort's free capacity and what the pool physically has.
type Board struct {
	cluster  ClusterReader
	capacity teams.FlavorCapacity
	waits    WaitReader
	now      func() time.Time
}

// WaitReader says how long a namespace's oldest pending workload has waited.
type WaitReader interface {
	LongestWait(namespace string, now time.Time) (time.Duration, error)
}

// NewBoard reads from the Kueue cache and the node capacity of flavors;
// waits may be nil, and then no wait times are shown.
func NewBoard(cluster ClusterReader, capacity teams.FlavorCapacity, waits WaitReader) *Board {
	return &Board{cluster: cluster, capacity: capacity, waits: waits, now: time.Now}
}

// Line is one flavor and resource of a team, as the cluster has it now.
type Line struct {
	Team, Flavor, Resource string
	// Nominal is the team's quota; Used what its admitted workloads take.
	Nominal, Used int64
	// Pending counts the team's workloads waiting for admission;
	// LongestWait is how long the oldest of them has waited.
	Pending     int
	LongestWait time.Duration
	// CohortNominal sums every ClusterQueue's quota in the team's cohort;
	// CohortFree is what of it admitted workloads leave unused.
	CohortNominal, CohortFree int64
	// Physical is what the flavor's nodes have; zero when unknown.
	Physical int64
}

// ExceedsPhysical reports whether granting delta would promise more than
// the pool's nodes have.
func (l Line) ExceedsPhysical(delta int64) bool {
	return l.Physical > 0 && delta > 0 && l.CohortNominal+delta > l.Physical
}

// Line reads one quota line of a team. It returns an error matching
// kube.ErrNotFound when the team has no ClusterQueue.
func (b *Board) Line(team, flavor, resource string) (Line, error) {
	cq, err := b.cluster.ClusterQueue(naming.ClusterQueue(team))
	if err != nil {
		return Line{}, fmt.Errorf("quota line of %s: %w", team, err)
	}
	r := corev1.ResourceName(resource)
	l := Line{Team: team, Flavor: flavor, Resource: resource, Pending: int(cq.Status.PendingWorkloads)}
	own := queue.QuotaLineOf(cq, flavor, r)
	l.Nominal, l.Used = own.Nominal, own.Used
	for _, other := range b.cluster.ClusterQueues() {
		if other.Name != cq.Name && (cq.Spec.CohortName == "" || other.Spec.CohortName != cq.Spec.CohortName) {
			continue
		}
		line := queue.QuotaLineOf(other, flavor, r)
		n, u := line.Nominal, line.Used
		l.CohortNominal += n
		if n > u {
			l.CohortFree += n - u
		}
	}
	if b.waits != nil {
		w, err := b.waits.LongestWait(naming.Namespace(team), b.now())
		if err != nil && !errors.Is(err, kube.ErrNotSynced) {
			return Line{}, fmt.Errorf("quota line of %s: %w", team, err)
		}
		l.LongestWait = w
	}
	rf, err := b.cluster.ResourceFlavor(flavor)
	if err != nil && !errors.Is(err, kube.ErrNotFound) {
		return Line{}, fmt.Errorf("quota line of %s: %w", team, err)
	}
	if rf != nil && b.capacity != nil {
		capacity, err := b.capacity(rf)
		if err != nil {
			return Line{}, fmt.Errorf("quota line of %s: %w", team, err)
		}
		q := capacity[r]
		l.Physical = q.Value()
	}
	return l, nil
}

// FlavorResources lists the accelerator resources a flavor's nodes offer.
type FlavorResources struct {
	Flavor    string
	Resources []string
}

// Flavors lists the flavors with accelerators, for the request form.
func (b *Board) Flavors() ([]FlavorResources, error) {
	var out []FlavorResources
	for _, rf := range b.cluster.ResourceFlavors() {
		if b.capacity == nil {
			break
		}
		c, err := b.capacity(rf)
		if err != nil {
			return nil, fmt.Errorf("flavors: %w", err)
		}
		f := FlavorResources{Flavor: rf.Name}
		for r := range c {
			if teams.IsAccelerator(r) {
				f.Resources = append(f.Resources, string(r))
			}
		}
		if len(f.Resources) > 0 {
			slices.Sort(f.Resources)
			out = append(out, f)
		}
	}
	return out, nil
}
