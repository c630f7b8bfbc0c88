// Package queue explains Kueue state to people: a team's quota, usage and
// workload counts, read from the informer cache and returned as plain structs.
package queue

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/gantry-dev/gantry/internal/kube"
	"github.com/gantry-dev/gantry/internal/naming"
)

// NoLimit is the value of FlavorQuota.BorrowingLimit when the ClusterQueue
// may borrow without limit from its cohort.
const NoLimit int64 = -1

// TeamOverview is a team's queue at a glance.
type TeamOverview struct {
	// Team is the team name, the value of the naming.LabelTeam label.
	Team string
	// ClusterQueue is the name of the team's ClusterQueue.
	ClusterQueue string
	// Cohort is the cohort the ClusterQueue borrows from and lends to; empty if none.
	Cohort string
	// Namespace and LocalQueue name the first LocalQueue pointing at the
	// ClusterQueue, the one users submit to; both are empty if there is none.
	Namespace  string
	LocalQueue string
	// LocalQueues lists every LocalQueue pointing at the ClusterQueue.
	LocalQueues []QueueRef
	// Flavors holds one entry per flavor and resource in the ClusterQueue's
	// spec, in spec order.
	Flavors []FlavorQuota
	// Pending counts workloads waiting for admission; Reserving those holding
	// quota; Admitted those fully admitted.
	Pending, Reserving, Admitted int
	// Active is false when Kueue reports the ClusterQueue as not active
	// (for example a missing ResourceFlavor); InactiveReason then says why.
	Active         bool
	InactiveReason string
}

// QueueRef names a LocalQueue.
type QueueRef struct {
	Namespace, Name string
}

// FlavorQuota is the quota and usage of one resource in one flavor. Values
// are in the resource's base unit rounded up (GPUs, CPUs, bytes).
type FlavorQuota struct {
	Flavor, Resource string
	// Nominal is the ClusterQueue's own quota.
	Nominal int64
	// Used is the quota taken by admitted workloads (status.flavorsUsage).
	Used int64
	// Reserved is the quota reserved by workloads, admitted or about to be
	// (status.flavorsReservation); it is at least Used.
	Reserved int64
	// Borrowed is the part of Used taken from the cohort beyond Nominal.
	Borrowed int64
	// BorrowingLimit caps Borrowed; NoLimit when uncapped, 0 when the
	// ClusterQueue is in no cohort.
	BorrowingLimit int64
}

// IsAccelerator reports whether the resource is a GPU or a GPU slice
// (nvidia.com/gpu, nvidia.com/mig-*, amd.com/gpu).
func (f FlavorQuota) IsAccelerator() bool {
	return strings.HasPrefix(f.Resource, "nvidia.com/") || f.Resource == "amd.com/gpu"
}

// Accelerators returns the entries for GPU resources only.
func (o TeamOverview) Accelerators() []FlavorQuota {
	var out []FlavorQuota
	for _, f := range o.Flavors {
		if f.IsAccelerator() {
			out = append(out, f)
		}
	}
	return out
}

// Source is the part of the informer cache the overview reads.
type Source interface {
	HasSynced() bool
	ClusterQueue(name string) (*kueue.ClusterQueue, error)
	TeamClusterQueues(team string) ([]*kueue.ClusterQueue, error)
	LocalQueuesFor(clusterQueue string) ([]*kueue.LocalQueue, error)
}

// Reader answers queue questions from the cache.
type Reader struct {
	src Source
}

// NewReader returns a Reader over src, normally a *kube.Cache.
func NewReader(src Source) *Reader {
	return &Reader{src: src}
}

// TeamOverview returns the team's quota, usage and workload counts. The
// team's ClusterQueue is the one labelled naming.LabelTeam=<team>, preferring
// the one named naming.ClusterQueue(team); if none is labelled, that one.
// It returns an error matching kube.ErrNotFound when the team has none, and
// kube.ErrNotSynced before the cache has listed the cluster once.
func (r *Reader) TeamOverview(team string) (TeamOverview, error) {
	if !r.src.HasSynced() {
		return TeamOverview{}, fmt.Errorf("team %s overview: %w", team, kube.ErrNotSynced)
	}
	cq, err := r.teamClusterQueue(team)
	if err != nil {
		return TeamOverview{}, fmt.Errorf("team %s overview: %w", team, err)
	}
	lqs, err := r.src.LocalQueuesFor(cq.Name)
	if err != nil {
		return TeamOverview{}, fmt.Errorf("team %s overview: %w", team, err)
	}
	return Overview(team, cq, lqs), nil
}

func (r *Reader) teamClusterQueue(team string) (*kueue.ClusterQueue, error) {
	labelled, err := r.src.TeamClusterQueues(team)
	if err != nil {
		return nil, err
	}
	want := naming.ClusterQueue(team)
	for _, cq := range labelled {
		if cq.Name == want {
			return cq, nil
		}
	}
	if len(labelled) > 0 {
		return labelled[0], nil
	}
	cq, err := r.src.ClusterQueue(want)
	if err != nil {
		return nil, err
	}
	if owner := cq.Labels[naming.LabelTeam]; owner != "" && owner != team {
		return nil, fmt.Errorf("cluster queue %s belongs to team %s: %w", want, owner, kube.ErrNotFound)
	}
	return cq, nil
}

// Overview computes a TeamOverview from a ClusterQueue and the LocalQueues
// pointing at it. It is pure: no cache, no API calls.
func Overview(team string, cq *kueue.ClusterQueue, lqs []*kueue.LocalQueue) TeamOverview {
	o := TeamOverview{
		Team:         team,
		ClusterQueue: cq.Name,
		Cohort:       string(cq.Spec.CohortName),
		Pending:      int(cq.Status.PendingWorkloads),
		Reserving:    int(cq.Status.ReservingWorkloads),
		Admitted:     int(cq.Status.AdmittedWorkloads),
		Active:       true,
	}
	for _, c := range cq.Status.Conditions {
		if c.Type == kueue.ClusterQueueActive && c.Status != "True" {
			o.Active = false
			o.InactiveReason = c.Message
			if o.InactiveReason == "" {
				o.InactiveReason = c.Reason
			}
		}
	}
	for _, lq := range lqs {
		o.LocalQueues = append(o.LocalQueues, QueueRef{Namespace: lq.Namespace, Name: lq.Name})
	}
	if first := preferredLocalQueue(team, lqs); first != nil {
		o.Namespace, o.LocalQueue = first.Namespace, first.Name
	}

	o.Flavors = QuotaOf(cq)
	return o
}

// preferredLocalQueue picks the queue users submit to: naming.LocalQueue in
// the team's namespace if present, else the first one.
func preferredLocalQueue(team string, lqs []*kueue.LocalQueue) *kueue.LocalQueue {
	for _, lq := range lqs {
		if lq.Namespace == naming.Namespace(team) && lq.Name == naming.LocalQueue {
			return lq
		}
	}
	if len(lqs) > 0 {
		return lqs[0]
	}
	return nil
}

func borrowingLimit(cohort kueue.CohortReference, limit *resource.Quantity) int64 {
	if cohort == "" {
		return 0
	}
	if limit == nil {
		return NoLimit
	}
	return limit.Value()
}
