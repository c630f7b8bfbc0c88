package cost

import (
	"maps"
	"time"

	"github.com/gantry-dev/gantry/internal/money"
	"github.com/gantry-dev/gantry/internal/store"
)

// Spend sums ledger rows: GPU-hours and money.
type Spend struct {
	// Runs counts every run; stopped runs (deleted while running) and runs
	// still going are neither succeeded nor failed.
	Runs          int `json:"runs"`
	SucceededRuns int `json:"succeededRuns"`
	FailedRuns    int `json:"failedRuns"`
	// AllocatedGPUHours is held quota. Of it, UnmeasuredGPUHours had no
	// utilization samples and is never counted as useful; UsefulGPUHours
	// weights the measured rest by utilization; IdleGPUHours is measured
	// minus useful.
	AllocatedGPUHours  float64 `json:"allocatedGpuHours"`
	UsefulGPUHours     float64 `json:"usefulGpuHours"`
	IdleGPUHours       float64 `json:"idleGpuHours"`
	UnmeasuredGPUHours float64 `json:"unmeasuredGpuHours"`
	// CostUSD is all spend; FailedCostUSD the part spent on runs that ended
	// failed, preempted or evicted; IdleCostUSD the idle share and
	// UnmeasuredCostUSD the unmeasured share.
	CostUSD           money.USD `json:"costUsd"`
	FailedCostUSD     money.USD `json:"failedCostUsd"`
	IdleCostUSD       money.USD `json:"idleCostUsd"`
	UnmeasuredCostUSD money.USD `json:"unmeasuredCostUsd"`
	// CostPerSuccessUSD is all spend divided by successful runs; zero when
	// none succeeded.
	CostPerSuccessUSD money.USD `json:"costPerSuccessUsd"`
}

// JobCost is one job's spend, for the top lists.
type JobCost struct {
	Team      string    `json:"team"`
	Namespace string    `json:"namespace"`
	Job       string    `json:"job"`
	Flavor    string    `json:"flavor"`
	Runs      int       `json:"runs"`
	GPUHours  float64   `json:"gpuHours"`
	CostUSD   money.USD `json:"costUsd"`
	IdleUSD   money.USD `json:"idleUsd"`
}

// Report is a team's (or the cluster's) spend over a period.
type Report struct {
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	Spend
	ByTeam    map[string]Spend  `json:"byTeam,omitempty"`
	TopByCost []JobCost         `json:"topByCost"`
	TopByIdle []JobCost         `json:"topByIdle"`
	Unpriced  int               `json:"unpriced"` // runs on flavors without a price
	Ledger    []store.LedgerRow `json:"ledger,omitempty"`
}

// Hours splits a row's allocated GPU-hours into measured and useful ones.
// Rows recorded before the measured part was kept count as measured
// throughout when they have a utilization, unmeasured otherwise.
func Hours(r store.LedgerRow) (measured, useful float64) {
	switch {
	case r.MeasuredGPUHours != nil:
		measured = min(max(0, *r.MeasuredGPUHours), r.AllocatedGPUHours)
		if r.UsefulGPUHours != nil {
			useful = *r.UsefulGPUHours
		} else if r.AvgUtilization != nil {
			useful = measured * clamp(*r.AvgUtilization/100)
		}
	case r.AvgUtilization != nil:
		measured = r.AllocatedGPUHours
		useful = measured * clamp(*r.AvgUtilization/100)
	}
	return measured, min(max(0, useful), measured)
}

// Useful returns the utilization-weighted GPU-hours of a row; unmeasured
// time is not useful.
func Useful(r store.LedgerRow) float64 {
	_, useful := Hours(r)
	return useful
}

func clamp(f float64) float64 { return max(0, min(1, f)) }

// share is the part of a row's cost spent on hours of its allocated ones.
func share(r store.LedgerRow, hours float64) money.USD {
	if r.AllocatedGPUHours <= 0 {
		return 0
	}
	return r.CostUSD.Scale(hours / r.AllocatedGPUHours)
}

// Wasted reports whether a run's cost counts as failed: it ended failed,
// preempted or evicted. Runs still going, succeeded or stopped do not.
func Wasted(outcome string) bool {
	return outcome == OutcomeFailed || outcome == OutcomeEvicted
}

// Add counts one run into the sums.
func (s *Spend) Add(r store.LedgerRow) {
	s.Runs++
	measured, useful := Hours(r)
	s.AllocatedGPUHours += r.AllocatedGPUHours
	s.UsefulGPUHours += useful
	s.IdleGPUHours += measured - useful
	s.UnmeasuredGPUHours += r.AllocatedGPUHours - measured
	s.CostUSD += r.CostUSD
	s.IdleCostUSD += share(r, measured-useful)
	s.UnmeasuredCostUSD += share(r, r.AllocatedGPUHours-measured)
	switch {
	case r.Outcome == OutcomeSucceeded:
		s.SucceededRuns++
	case Wasted(r.Outcome):
		s.FailedRuns++
		s.FailedCostUSD += r.CostUSD
	}
	s.CostPerSuccessUSD = 0
	if s.SucceededRuns > 0 {
		s.CostPerSuccessUSD = s.CostUSD / money.USD(s.SucceededRuns)
	}
}

// Summarize builds a report from ledger rows; top lists hold up to top jobs.
func Summarize(rows []store.LedgerRow, from, to time.Time, top int) Report {
	s := NewSummary(from, to, top)
	for _, r := range rows {
		s.Add(r)
	}
	rep := s.Report()
	rep.Ledger = rows
	return rep
}

// Summary sums ledger rows into a Report one row at a time, so a month of
// runs can be summed as it is read instead of held whole (at 10,000 runs,
// several MiB each time the pages' figures were read again).
type Summary struct {
	rep  Report
	jobs map[string]*JobCost
	// own is nil unless jobs' entries are shared with the summary this one
	// was cloned from: then an entry not in own is copied before it changes.
	own map[string]bool
	top int
}

// NewSummary starts the report of the runs of [from, to); its top lists
// hold up to top jobs.
func NewSummary(from, to time.Time, top int) *Summary {
	return &Summary{rep: Report{From: from, To: to, ByTeam: map[string]Spend{}}, jobs: map[string]*JobCost{}, top: top}
}

// Add counts one run into the report.
func (s *Summary) Add(r store.LedgerRow) {
	s.rep.Add(r)
	t := s.rep.ByTeam[r.Team]
	t.Add(r)
	s.rep.ByTeam[r.Team] = t
	if r.GPUs > 0 && r.USDPerHour == 0 && r.CostUSD == 0 {
		s.rep.Unpriced++
	}
	k := r.Namespace + "/" + r.JobName
	j := s.jobs[k]
	switch {
	case j == nil:
		j = &JobCost{Team: r.Team, Namespace: r.Namespace, Job: r.JobName, Flavor: r.Flavor}
		s.jobs[k] = j
		if s.own != nil {
			s.own[k] = true
		}
	case s.own != nil && !s.own[k]:
		jc := *j
		j = &jc
		s.jobs[k] = j
		s.own[k] = true
	}
	j.Runs++
	j.GPUHours += r.AllocatedGPUHours
	j.CostUSD += r.CostUSD
	measured, useful := Hours(r)
	j.IdleUSD += share(r, measured-useful)
}

// Clone returns a copy of s, reporting up to to, that runs can be added
// to without changing s or the reports it gave: figures kept at one
// ledger version add the runs recorded since to a copy. The copy shares
// s's jobs until it adds to one (the cluster's month is 50,000 jobs at
// 50,000 workloads, and each ended run adds to one of them). s must not
// be added to after it was cloned.
func (s *Summary) Clone(to time.Time) *Summary {
	c := &Summary{rep: s.rep, jobs: maps.Clone(s.jobs), own: map[string]bool{}, top: s.top}
	c.rep.To = to
	c.rep.ByTeam = maps.Clone(s.rep.ByTeam)
	return c
}

// Report is the report of the runs added so far, without their rows.
func (s *Summary) Report() Report {
	rep := s.rep
	rep.TopByCost = s.topJobs(func(j *JobCost) money.USD { return j.CostUSD })
	rep.TopByIdle = s.topJobs(func(j *JobCost) money.USD { return j.IdleUSD })
	return rep
}

// topJobs is the s.top jobs with the most by key, ties by namespace/job,
// leaving out those with none. They are copies: the report does not keep
// the summary's jobs (and the ledger rows their names point into) alive.
func (s *Summary) topJobs(key func(*JobCost) money.USD) []JobCost {
	return topOf(s.jobs, s.top, func(j *JobCost) bool { return key(j) <= 0 },
		func(an string, a *JobCost, bn string, b *JobCost) bool {
			ka, kb := key(a), key(b)
			return ka > kb || (ka == kb && an < bn)
		})
}

// MonthStart is the first instant of t's month in UTC.
func MonthStart(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
}
