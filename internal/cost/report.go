package cost

import (
	"cmp"
	"slices"
	"time"

	"github.com/gantry-dev/gantry/internal/store"
)

// Spend sums ledger rows: GPU-hours and money.
type Spend struct {
	// Runs counts every run; stopped runs (deleted while running) are
	// neither succeeded nor failed.
	Runs, SucceededRuns, FailedRuns int
	// AllocatedGPUHours is held quota; UsefulGPUHours weights it by measured
	// utilization (runs without measurements count as fully useful, so idle
	// is never overstated); IdleGPUHours is the difference.
	AllocatedGPUHours, UsefulGPUHours, IdleGPUHours float64
	// CostUSD is all spend; FailedCostUSD the part spent on runs that failed
	// or were evicted; IdleCostUSD the idle share.
	CostUSD, FailedCostUSD, IdleCostUSD float64
	// CostPerSuccessUSD is all spend divided by successful runs; zero when
	// none succeeded.
	CostPerSuccessUSD float64
}

// JobCost is one job's spend, for the top lists.
type JobCost struct {
	Team, Namespace, Job, Flavor string
	Runs                         int
	GPUHours, CostUSD, IdleUSD   float64
}

// Report is a team's (or the cluster's) spend over a period.
type Report struct {
	From, To time.Time
	Spend
	ByTeam    map[string]Spend
	TopByCost []JobCost
	TopByIdle []JobCost
	Unpriced  int // runs on flavors without a price
	Ledger    []store.LedgerRow
}

// Useful returns the utilization-weighted GPU-hours of a row.
func Useful(r store.LedgerRow) float64 {
	if r.AvgUtilization == nil {
		return r.AllocatedGPUHours
	}
	return r.AllocatedGPUHours * clamp(*r.AvgUtilization/100)
}

func clamp(f float64) float64 { return max(0, min(1, f)) }

// Add counts one run into the sums.
func (s *Spend) Add(r store.LedgerRow) {
	s.Runs++
	useful := Useful(r)
	s.AllocatedGPUHours += r.AllocatedGPUHours
	s.UsefulGPUHours += useful
	s.IdleGPUHours += r.AllocatedGPUHours - useful
	s.CostUSD += r.CostUSD
	if r.AllocatedGPUHours > 0 {
		s.IdleCostUSD += r.CostUSD * (r.AllocatedGPUHours - useful) / r.AllocatedGPUHours
	}
	switch r.Outcome {
	case OutcomeSucceeded:
		s.SucceededRuns++
	case OutcomeStopped:
	default:
		s.FailedRuns++
		s.FailedCostUSD += r.CostUSD
	}
	s.CostPerSuccessUSD = 0
	if s.SucceededRuns > 0 {
		s.CostPerSuccessUSD = s.CostUSD / float64(s.SucceededRuns)
	}
}

// Summarize builds a report from ledger rows; top lists hold up to top jobs.
func Summarize(rows []store.LedgerRow, from, to time.Time, top int) Report {
	rep := Report{From: from, To: to, ByTeam: map[string]Spend{}, Ledger: rows}
	jobs := map[string]*JobCost{}
	for _, r := range rows {
		rep.Add(r)
		t := rep.ByTeam[r.Team]
		t.Add(r)
		rep.ByTeam[r.Team] = t
		if r.GPUs > 0 && r.USDPerHour == 0 {
			rep.Unpriced++
		}
		k := r.Namespace + "/" + r.JobName
		j := jobs[k]
		if j == nil {
			j = &JobCost{Team: r.Team, Namespace: r.Namespace, Job: r.JobName, Flavor: r.Flavor}
			jobs[k] = j
		}
		j.Runs++
		j.GPUHours += r.AllocatedGPUHours
		j.CostUSD += r.CostUSD
		if r.AllocatedGPUHours > 0 {
			j.IdleUSD += r.CostUSD * (r.AllocatedGPUHours - Useful(r)) / r.AllocatedGPUHours
		}
	}
	all := make([]JobCost, 0, len(jobs))
	for _, j := range jobs {
		all = append(all, *j)
	}
	rep.TopByCost = topBy(all, top, func(j JobCost) float64 { return j.CostUSD })
	rep.TopByIdle = topBy(all, top, func(j JobCost) float64 { return j.IdleUSD })
	return rep
}

func topBy(jobs []JobCost, n int, key func(JobCost) float64) []JobCost {
	out := slices.Clone(jobs)
	slices.SortFunc(out, func(a, b JobCost) int {
		if c := cmp.Compare(key(b), key(a)); c != 0 {
			return c
		}
		return cmp.Compare(a.Namespace+"/"+a.Job, b.Namespace+"/"+b.Job)
	})
	out = slices.DeleteFunc(out, func(j JobCost) bool { return key(j) <= 0 })
	if len(out) > n {
		out = out[:n]
	}
	return out
}

// MonthStart is the first instant of t's month in UTC.
func MonthStart(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
}
