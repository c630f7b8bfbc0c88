package queue

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	visibility "sigs.k8s.io/kueue/apis/visibility/v1beta2"

	"github.com/gantry-dev/gantry/internal/cost"
	"github.com/gantry-dev/gantry/internal/kube"
	"github.com/gantry-dev/gantry/internal/naming"
)

// JobStatus is why a job waits, what it was given and how it ended.
type JobStatus struct {
	Phase Phase
	// Message is Kueue's or Kubernetes' own words about the phase.
	Message string
	// Cause says why the job ended or is stuck, and what to do next; nil
	// while nothing went wrong.
	Cause *Cause
	// Timeline lists when each phase began, oldest first.
	Timeline []Moment
	// Pending explains a job waiting for quota; nil otherwise.
	Pending *PendingReason
	// Waited is how long the job waited (so far, while it waits).
	Waited time.Duration
	// Allocation is what Kueue gave the job; zero while it waits.
	Allocation Allocation
	// Eviction says why the job was last evicted or preempted; nil if never.
	Eviction *Eviction
	// Failure is the cause of a failed pod; nil if none failed.
	Failure *Failure
	// AdmittedAt is when the current run began; zero if not admitted.
	AdmittedAt time.Time
	// EndedAt is when the job finished; zero while it goes on.
	EndedAt time.Time
	// Workload names the Kueue Workload the status is read from.
	Workload string
	// Events are the recent events about the job, its Workloads and its
	// pods, most recent first; at most MaxJobEvents.
	Events []JobEvent
}

// MaxJobEvents is how many recent events a job's status carries.
const MaxJobEvents = 10

// JobEvent is one Kubernetes event about a job or its parts, such as the
// scheduler's FailedScheduling or Kueue's Pending.
type JobEvent struct {
	// Object is what the event is about, e.g. "Pod train-0-abc".
	Object          string
	Type            string
	Reason, Message string
	Count           int32
	LastSeen        time.Time
}

// EventSource is the informer cache of events, indexed by involved object.
type EventSource interface {
	EventsAbout(namespace, kind, name string) ([]*kube.Event, error)
}

// Moment is a phase change.
type Moment struct {
	At     time.Time
	Phase  Phase
	Detail string
}

// Allocation is the accelerators and nodes a job holds.
type Allocation struct {
	Flavor, Resource string
	Count            int64
	// MIG is true for MIG slices rather than whole GPUs.
	MIG   bool
	Nodes []string
}

// PendingReason is a waiting job's reason, in words and in Kueue's words.
type PendingReason struct {
	// Words is the sentence shown first.
	Words string
	// Raw is Kueue's own message.
	Raw              string
	Flavor, Resource string
	// Needed is what the job asks for; TeamReserved and TeamNominal the team's
	// reserved and own quota of that flavor; CohortLendable what other
	// queues of the cohort could lend now.
	Needed, TeamReserved, TeamNominal, CohortLendable int64
	// Shortfall is how many more Kueue says are needed; 0 if it did not say.
	Shortfall int64
	// PositionLocal and PositionCluster count the workloads ahead of it
	// in the LocalQueue and the ClusterQueue; -1 when unknown.
	PositionLocal, PositionCluster int
	// PositionsAsOf is when the positions were read, set only when they
	// are an older copy because Kueue's visibility API does not answer.
	PositionsAsOf time.Time
	// PositionsTrouble says why the positions are old or unknown, e.g.
	// "Kueue's queue positions are not answering"; "" when they answered.
	PositionsTrouble string
}

// Eviction is why a run was stopped by Kueue.
type Eviction struct {
	At              time.Time
	Preempted       bool
	Reason, Message string
	// PreemptedBy names the job that took the quota, empty when unknown;
	// PreemptorTeam is its team, PreemptorPriorityClass and
	// PreemptorPriority its priority.
	PreemptedBy, PreemptorTeam, PreemptorPriorityClass string
	PreemptorPriority                                  int32
	// Reclaimed is true when the quota was taken back by the team that
	// lent it within the cohort.
	Reclaimed bool
	// Requeued is true when Kueue puts the job back in the queue.
	Requeued bool
	// NotReadyFor is, for an eviction by waitForPodsReady, how long the
	// pods had been admitted without all being ready; 0 when unknown.
	NotReadyFor time.Duration
}

// Failure is a failed container's cause.
type Failure struct {
	Pod, Container  string
	ExitCode        int32
	Reason, Message string
	OOMKilled       bool
}

// Positions reads pending positions from Kueue's visibility API.
type Positions interface {
	LocalQueuePending(ctx context.Context, namespace, localQueue string) ([]visibility.PendingWorkload, error)
}

// QueueSource is the informer cache of queues.
type QueueSource interface {
	ClusterQueue(name string) (*kueue.ClusterQueue, error)
	ClusterQueues() []*kueue.ClusterQueue
}

// WorkloadFinder finds a workload by UID, for naming a preemptor.
type WorkloadFinder interface {
	WorkloadByUID(uid string) (*kueue.Workload, bool)
}

// StatusInput is what a job's status is read from.
type StatusInput struct {
	// Workloads of the job (one for a Job; one per pod for pod groups),
	// newest is used.
	Workloads []*kueue.Workload
	Pods      []*corev1.Pod
	// Job is the batch Job of a training job; nil for other kinds.
	Job *batchv1.Job
	// Stopped is true for a notebook scaled to zero.
	Stopped bool
	Now     time.Time
	// Logs reads a failed container's last lines; nil shows none.
	Logs LastLogLines
}

// StatusReader builds job statuses from caches and the visibility API.
type StatusReader struct {
	Queues    QueueSource
	Workloads WorkloadFinder
	// Positions may be nil; positions are then unknown.
	Positions Positions
	// Events may be nil; the status then lists no events.
	Events EventSource
	// Memory may be nil; an out-of-memory cause then says the peak is unknown.
	Memory PeakMemory
	// Kept may be nil; AllQueues then summarises the queues on each call.
	Kept *KeptQueues
}

var (
	reShortfall = regexp.MustCompile(`insufficient (?:unused )?quota for (\S+) in flavor (\S+?),? (?:request > maximum capacity|(\d+) more needed)`)
	reUID       = regexp.MustCompile(`UID: ([0-9a-fA-F-]{8,})`)
)

// JobStatus reads the job's status. ctx bounds the visibility API call.
func (r StatusReader) JobStatus(ctx context.Context, in StatusInput) JobStatus {
	var st JobStatus
	st.Events = r.events(in)
	wl := newest(in.Workloads)
	st.Phase, st.Message = PhaseOf(in)
	if wl == nil {
		st.Failure = failureOf(in.Pods)
		st.Cause = r.causeOf(ctx, in, &st)
		return st
	}
	st.Workload = wl.Name
	conds := wl.Status.Conditions
	st.Timeline = append(st.Timeline, Moment{At: wl.CreationTimestamp.Time, Phase: PhaseQueued, Detail: "Submitted to queue " + string(wl.Spec.QueueName) + "."})
	if c := trueCond(conds, kueue.WorkloadQuotaReserved); c != nil {
		st.Timeline = append(st.Timeline, Moment{At: c.LastTransitionTime.Time, Phase: PhaseQuotaReserved, Detail: c.Message})
	}
	if c := trueCond(conds, kueue.WorkloadAdmitted); c != nil {
		st.AdmittedAt = c.LastTransitionTime.Time
		st.Timeline = append(st.Timeline, Moment{At: c.LastTransitionTime.Time, Phase: PhaseAdmitted, Detail: c.Message})
	}
	if started, ok := firstRunning(in.Pods); ok && !st.AdmittedAt.IsZero() {
		st.Timeline = append(st.Timeline, Moment{At: started, Phase: PhaseRunning, Detail: "Pods started."})
	}
	if c := trueCond(conds, kueue.WorkloadEvicted); c != nil {
		st.Eviction = r.eviction(wl, c)
		phase := PhaseEvicted
		if st.Eviction.Preempted {
			phase = PhasePreempted
		}
		st.Timeline = append(st.Timeline, Moment{At: c.LastTransitionTime.Time, Phase: phase, Detail: c.Message})
	}
	if st.AdmittedAt.IsZero() && st.Eviction != nil {
		// An eviction resets the Admitted condition, so the object no
		// longer says when the run was admitted; Kueue's Admitted event does.
		if e, ok := r.admittedEvent(wl); ok {
			st.Timeline = append(st.Timeline, Moment{At: e.LastSeen, Phase: PhaseAdmitted, Detail: e.Message})
		}
	}
	if c := trueCond(conds, kueue.WorkloadFinished); c != nil {
		phase := PhaseSucceeded
		if c.Reason != kueue.WorkloadFinishedReasonSucceeded {
			phase = PhaseFailed
		}
		st.EndedAt = c.LastTransitionTime.Time
		st.Timeline = append(st.Timeline, Moment{At: c.LastTransitionTime.Time, Phase: phase, Detail: c.Message})
	}
	slices.SortStableFunc(st.Timeline, func(a, b Moment) int { return a.At.Compare(b.At) })
	if e := st.Eviction; e != nil && e.Reason == kueue.WorkloadEvictedByPodsReadyTimeout {
		e.NotReadyFor = sinceAdmitted(st.Timeline, e.At)
	}

	if wl.Status.Admission != nil {
		st.Allocation = allocationOf(wl, in.Pods)
	}
	switch {
	case !st.AdmittedAt.IsZero():
		st.Waited = st.AdmittedAt.Sub(wl.CreationTimestamp.Time)
	case st.Phase == PhaseQueued || st.Phase == PhaseEvicted || st.Phase == PhasePreempted:
		st.Waited = in.Now.Sub(wl.CreationTimestamp.Time)
		st.Pending = r.pending(ctx, wl)
	}
	st.Failure = failureOf(in.Pods)
	st.Cause = r.causeOf(ctx, in, &st)
	return st
}

// events gathers the recent events about the job (the owners of its
// Workloads), its Workloads and its pods, most recent first.
// admittedEvent finds Kueue's latest "Admitted" event of the workload.
func (r StatusReader) admittedEvent(wl *kueue.Workload) (*kube.Event, bool) {
	if r.Events == nil {
		return nil, false
	}
	evs, err := r.Events.EventsAbout(wl.Namespace, "Workload", wl.Name)
	if err != nil {
		return nil, false
	}
	var found *kube.Event
	for _, e := range evs {
		if e.Reason == "Admitted" && (found == nil || e.LastSeen.After(found.LastSeen)) {
			found = e
		}
	}
	return found, found != nil
}

func (r StatusReader) events(in StatusInput) []JobEvent {
	if r.Events == nil {
		return nil
	}
	type ref struct{ namespace, kind, name string }
	var refs []ref
	for _, wl := range in.Workloads {
		for _, o := range wl.OwnerReferences {
			if o.Kind != "Pod" {
				refs = append(refs, ref{wl.Namespace, o.Kind, o.Name})
			}
		}
		refs = append(refs, ref{wl.Namespace, "Workload", wl.Name})
	}
	for _, p := range in.Pods {
		refs = append(refs, ref{p.Namespace, "Pod", p.Name})
	}
	var out []JobEvent
	seen := map[ref]bool{}
	for _, rf := range refs {
		if seen[rf] {
			continue
		}
		seen[rf] = true
		evs, err := r.Events.EventsAbout(rf.namespace, rf.kind, rf.name)
		if err != nil {
			continue // cache not synced yet: the status goes without events
		}
		for _, e := range evs {
			out = append(out, JobEvent{Object: rf.kind + " " + rf.name, Type: e.Type, Reason: e.Reason, Message: e.Message,
				Count: max(e.Count, 1), LastSeen: e.LastSeen})
		}
	}
	slices.SortStableFunc(out, func(a, b JobEvent) int { return b.LastSeen.Compare(a.LastSeen) })
	if len(out) > MaxJobEvents {
		out = out[:MaxJobEvents]
	}
	return out
}

func (r StatusReader) pending(ctx context.Context, wl *kueue.Workload) *PendingReason {
	p := &PendingReason{PositionLocal: -1, PositionCluster: -1}
	if c := apimeta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadQuotaReserved); c != nil && c.Status == metav1.ConditionFalse {
		p.Raw = c.Message
	}
	p.Flavor, p.Resource, p.Needed = requested(wl)
	if m := reShortfall.FindStringSubmatch(p.Raw); m != nil {
		p.Resource, p.Flavor = m[1], m[2]
		p.Shortfall, _ = strconv.ParseInt(m[3], 10, 64)
	}
	var cq *kueue.ClusterQueue
	if r.Queues != nil {
		cq = r.teamQueueOf(wl)
	}
	if cq != nil && p.Flavor != "" {
		line := QuotaLineOf(cq, p.Flavor, corev1.ResourceName(p.Resource))
		p.TeamNominal, p.TeamReserved = line.Nominal, line.Reserved
		p.CohortLendable = r.lendable(cq, p.Flavor, p.Resource)
	}
	if r.Positions != nil {
		items, err := r.Positions.LocalQueuePending(ctx, wl.Namespace, string(wl.Spec.QueueName))
		var stale *StalePositionsError
		if err != nil {
			p.PositionsTrouble = positionsTrouble(err)
			if !errors.As(err, &stale) {
				items = nil
			}
		}
		for _, it := range items {
			if it.Name == wl.Name {
				p.PositionLocal, p.PositionCluster = int(it.PositionInLocalQueue), int(it.PositionInClusterQueue)
				if stale != nil {
					p.PositionsAsOf = stale.ReadAt
				}
			}
		}
	}
	p.Words = p.sentence()
	return p
}

// positionsTrouble says why Kueue's visibility API gave no positions.
func positionsTrouble(err error) string {
	if errors.Is(err, kube.ErrForbidden) {
		return "the portal may not read Kueue's queue positions"
	}
	return "Kueue's queue positions are not answering"
}

// sentence puts the reason in words: "waiting for 4 H100 GPUs: your team
// uses 12 of 16, the cohort has none to lend; 3 jobs ahead", with "(as of
// 14:02:10 UTC; Kueue's queue positions are not answering)" after an
// older copy of the positions, or "; place in line unknown: ..." without one.
func (p *PendingReason) sentence() string {
	var b strings.Builder
	if p.Flavor == "" {
		b.WriteString("waiting for Kueue to admit it")
	} else {
		fmt.Fprintf(&b, "waiting for %s", Amount(p.Needed, p.Flavor, p.Resource))
		if p.TeamNominal > 0 || p.TeamReserved > 0 {
			fmt.Fprintf(&b, ": your team uses %d of %d", p.TeamReserved, p.TeamNominal)
			if p.CohortLendable > 0 {
				fmt.Fprintf(&b, ", the cohort can lend %d", p.CohortLendable)
			} else {
				b.WriteString(", the cohort has none to lend")
			}
		}
		if p.Shortfall > 0 {
			fmt.Fprintf(&b, " (%d more needed)", p.Shortfall)
		}
	}
	switch {
	case p.PositionCluster == 0:
		b.WriteString("; next in line")
	case p.PositionCluster == 1:
		b.WriteString("; 1 job ahead")
	case p.PositionCluster > 1:
		fmt.Fprintf(&b, "; %d jobs ahead", p.PositionCluster)
	case p.PositionsTrouble != "":
		fmt.Fprintf(&b, "; place in line unknown: %s", p.PositionsTrouble)
	}
	if !p.PositionsAsOf.IsZero() {
		fmt.Fprintf(&b, " (as of %s; %s)", p.PositionsAsOf.UTC().Format("15:04:05 MST"), p.PositionsTrouble)
	}
	return b.String()
}

// Amount says "4 H100 GPUs" or "2 MIG 1g.10gb slices" for a flavor's resource.
func Amount(n int64, flavor, resource string) string {
	if slice, ok := strings.CutPrefix(resource, "nvidia.com/mig-"); ok {
		return fmt.Sprintf("%d MIG %s %s", n, slice, plural(n, "slice", "slices"))
	}
	if strings.HasPrefix(resource, "nvidia.com/") || resource == "amd.com/gpu" {
		model := strings.ToUpper(strings.SplitN(flavor, "-", 2)[0])
		return fmt.Sprintf("%d %s %s", n, model, plural(n, "GPU", "GPUs"))
	}
	return fmt.Sprintf("%d %s in %s", n, resource, flavor)
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func (r StatusReader) teamQueueOf(wl *kueue.Workload) *kueue.ClusterQueue {
	team, _ := naming.TeamOfNamespace(wl.Namespace)
	cq, err := r.Queues.ClusterQueue(naming.ClusterQueue(team))
	if err != nil {
		return nil
	}
	return cq
}

// lendable is what the other ClusterQueues of cq's cohort have unused, capped
// by their lending limits.
func (r StatusReader) lendable(cq *kueue.ClusterQueue, flavor, resource string) int64 {
	if cq.Spec.CohortName == "" {
		return 0
	}
	var total int64
	for _, other := range r.Queues.ClusterQueues() {
		if other.Name == cq.Name || other.Spec.CohortName != cq.Spec.CohortName {
			continue
		}
		line := QuotaLineOf(other, flavor, corev1.ResourceName(resource))
		free := max(0, line.Nominal-line.Reserved)
		if limit, ok := lendingLimit(other, flavor, resource); ok {
			free = min(free, limit)
		}
		total += free
	}
	return total
}

func lendingLimit(cq *kueue.ClusterQueue, flavor, resource string) (int64, bool) {
	for _, rg := range cq.Spec.ResourceGroups {
		for _, f := range rg.Flavors {
			if string(f.Name) != flavor {
				continue
			}
			for _, res := range f.Resources {
				if string(res.Name) == resource && res.LendingLimit != nil {
					return res.LendingLimit.Value(), true
				}
			}
		}
	}
	return 0, false
}

// requested is the accelerator a workload asks for: the pool its pods
// select (naming.LabelPool, the flavor name) and the total count.
func requested(wl *kueue.Workload) (flavor, resource string, n int64) {
	for _, ps := range wl.Spec.PodSets {
		if f := ps.Template.Spec.NodeSelector[naming.LabelPool]; f != "" {
			flavor = f
		}
		for _, c := range ps.Template.Spec.Containers {
			for res, q := range c.Resources.Requests {
				if strings.HasPrefix(string(res), "nvidia.com/") || res == "amd.com/gpu" {
					resource = string(res)
					n += q.Value() * int64(ps.Count)
				}
			}
		}
	}
	return flavor, resource, n
}

func allocationOf(wl *kueue.Workload, pods []*corev1.Pod) Allocation {
	// The flavor and accelerator rule has one home: cost.AllocationOf.
	ca, _ := cost.AllocationOf(wl)
	a := Allocation{Flavor: ca.Flavor, Resource: ca.Resource, Count: ca.GPUs}
	a.MIG = strings.HasPrefix(a.Resource, "nvidia.com/mig-")
	for _, p := range pods {
		if p.Spec.NodeName != "" && !slices.Contains(a.Nodes, p.Spec.NodeName) {
			a.Nodes = append(a.Nodes, p.Spec.NodeName)
		}
	}
	slices.Sort(a.Nodes)
	return a
}

func (r StatusReader) eviction(wl *kueue.Workload, c *metav1.Condition) *Eviction {
	e := &Eviction{At: c.LastTransitionTime.Time, Reason: c.Reason, Message: c.Message,
		Preempted: c.Reason == kueue.WorkloadEvictedByPreemption}
	msg := c.Message
	if p := trueCond(wl.Status.Conditions, kueue.WorkloadPreempted); p != nil {
		e.Preempted = true
		msg = p.Message + " " + msg
	}
	if p := trueCond(wl.Status.Conditions, kueue.WorkloadPreempted); p != nil {
		e.Reclaimed = p.Reason == kueue.InCohortReclamationReason || p.Reason == kueue.InCohortReclaimWhileBorrowingReason
	}
	// Kueue requeues an evicted workload (after a backoff for some reasons)
	// until it deactivates it, e.g. at its requeuing limit.
	e.Requeued = wl.Spec.Active == nil || *wl.Spec.Active
	if m := reUID.FindStringSubmatch(msg); m != nil {
		e.PreemptedBy = "workload UID " + m[1]
		if r.Workloads != nil {
			if by, ok := r.Workloads.WorkloadByUID(m[1]); ok {
				e.preemptor(by)
			}
		}
	}
	return e
}

// sinceAdmitted is how long before at the run was last admitted, from a
// sorted timeline; 0 when no admission precedes it.
func sinceAdmitted(timeline []Moment, at time.Time) time.Duration {
	var admitted time.Time
	for _, m := range timeline {
		if m.Phase == PhaseAdmitted && !m.At.After(at) {
			admitted = m.At
		}
	}
	if admitted.IsZero() {
		return 0
	}
	return at.Sub(admitted)
}

func ownerName(wl *kueue.Workload) string {
	for _, ref := range wl.OwnerReferences {
		return ref.Name
	}
	return wl.Name
}

func failureOf(pods []*corev1.Pod) *Failure {
	for _, p := range pods {
		for _, cs := range p.Status.ContainerStatuses {
			t := cs.State.Terminated
			if t == nil {
				t = cs.LastTerminationState.Terminated
			}
			if t == nil || t.ExitCode == 0 {
				continue
			}
			return &Failure{Pod: p.Name, Container: cs.Name, ExitCode: t.ExitCode, Reason: t.Reason, Message: t.Message,
				OOMKilled: t.Reason == "OOMKilled"}
		}
	}
	return nil
}

func firstRunning(pods []*corev1.Pod) (time.Time, bool) {
	var first time.Time
	for _, p := range pods {
		if p.Status.StartTime == nil || (p.Status.Phase != corev1.PodRunning && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed) {
			continue
		}
		if first.IsZero() || p.Status.StartTime.Time.Before(first) {
			first = p.Status.StartTime.Time
		}
	}
	return first, !first.IsZero()
}

func findCond(conds []metav1.Condition, t string) *metav1.Condition {
	return apimeta.FindStatusCondition(conds, t)
}

func trueCond(conds []metav1.Condition, t string) *metav1.Condition {
	c := apimeta.FindStatusCondition(conds, t)
	if c == nil || c.Status != metav1.ConditionTrue {
		return nil
	}
	return c
}

func newest(wls []*kueue.Workload) *kueue.Workload {
	var n *kueue.Workload
	for _, wl := range wls {
		if n == nil || wl.CreationTimestamp.After(n.CreationTimestamp.Time) {
			n = wl
		}
	}
	return n
}
