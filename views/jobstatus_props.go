package views

// JobQueueStatus is why a job waits, what it uses and what it costs: the
// status component of the job page, refreshed in place.
type JobQueueStatus struct {
	// URL serves this fragment again for the refresh script.
	URL   string
	Phase string
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
	HasData                    bool
	Utilization, Memory, Power string
	Idle                       bool
	Chart                      LineChart
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
