package views

// JobStatusPanel is the one status panel of a job page, refreshed in
// place: its phase, why it ended or waits and what to do next, its pods,
// what it was given, its GPU use and its cost.
type JobStatusPanel struct {
	// URL serves this fragment again for the refresh script.
	URL string
	// Phase is one of the phases of queue.Phase; Message the cluster's own
	// words about it, shown when there is no cause or pending reason.
	Phase, Message string
	// Ended is set once the phase is final (succeeded, failed, deleted):
	// how many of its pods are ready is then no news ("0 of 1 pods ready"
	// under "All pods finished successfully" read as a fault).
	Ended bool
	// Cause is why the job ended or is stuck; nil while all is well.
	Cause                   *CauseView
	Replicas, ReadyReplicas int32
	Pods                    []JobPod
	// Pending is set while the job waits for quota.
	Pending *PendingView
	// Waited is the wait so far or before admission, in words; TypicalWait
	// the team's p50 wait for the flavor over the last week ("" if unknown).
	Waited, TypicalWait string
	Timeline            []TimelineRow
	// Allocation says what the job was given, in words; "" while it waits.
	Allocation string
	Eviction   *EvictionView
	Failure    *FailureView
	GPU        *GPUView
	Cost       *CostView
	// Events are the recent Kubernetes events about the job, most recent first.
	Events []EventRow
	// Stale says, while the Kubernetes API server does not answer, that
	// this status may be out of date; "" otherwise.
	Stale string
}

// CauseView is why a job ended, in one sentence, and what to do next.
type CauseView struct {
	// Kind is the queue.CauseKind, for styling and tests.
	Kind, Words, Next string
	// Fix is the suggested change in words ("memory 16Gi → 32Gi"); "" if none.
	Fix string
	// LogTail is the failed container's last lines.
	LogTail []string
	// LogTailNote says why they (or the rest of them) cannot be shown; ""
	// when they were read.
	LogTailNote string
	// RelaunchURL opens the launch form pre-filled from this run (with the
	// fix applied); "" when it cannot be relaunched from the portal.
	RelaunchURL string
}

// EventRow is one Kubernetes event about the job, its Workload or a pod.
type EventRow struct {
	// Object is what it is about ("Pod train-0-abc"); Age how long ago it
	// last happened, in words.
	Object, Reason, Message, Age string
	Count                        int32
	// Warning is true for events of type Warning.
	Warning bool
}

// PendingView is a waiting job's reason.
type PendingView struct {
	// Words is Gantry's sentence; Raw is Kueue's message, shown beside it.
	Words, Raw string
	// PositionLocal and PositionCluster are 1-based places in line; 0 when unknown.
	PositionLocal, PositionCluster int
}

// TimelineRow is one phase change.
type TimelineRow struct {
	At, Phase, Detail string
}

// EvictionView is why Kueue stopped a run.
type EvictionView struct {
	At, Reason, Message, PreemptedBy string
	Preempted                        bool
}

// FailureView is a failed container's cause.
type FailureView struct {
	Pod, Container, Reason, Message string
	ExitCode                        int32
	OOMKilled                       bool
}

// GPUView is measured GPU use from Prometheus.
type GPUView struct {
	// Pending says Prometheus had not answered within the page's wait;
	// the panel's next refresh shows the figures.
	Pending                    bool
	HasData                    bool
	Utilization, Memory, Power string
	Idle                       bool
	Chart                      LineChart
	// ChartPending says the figures came but the utilization chart had
	// not within the page's wait; the panel's next refresh shows it.
	ChartPending bool
	// AsOf is when the figures were measured, set when that is more than
	// a scrape interval ago (newer ones are on their way).
	AsOf string
}

// CostView is the job's cost so far (or in total once ended).
type CostView struct {
	Price, AllocatedHours, Cost, UsefulHours, IdleCost string
	// UnmeasuredHours and UnmeasuredCost are the allocated time without GPU
	// samples, counted neither useful nor idle; "" if every hour was measured.
	UnmeasuredHours, UnmeasuredCost string
	// Wasted is the cost of runs that ended failed, preempted or evicted; "" if none.
	Wasted string
	Ended  bool
}
