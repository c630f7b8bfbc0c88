package cost

import (
	"cmp"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/gantry-dev/gantry/internal/money"
	"github.com/gantry-dev/gantry/internal/store"
)

// TestTopIdleIsTheMostIdleTiesByName: the idle lists are the n most idle
// jobs (owners, kinds), ties in name order, as sorting them all gives.
func TestTopIdleIsTheMostIdleTiesByName(t *testing.T) {
	sorted := func(m map[string]*IdleShare, n int) []IdleShare {
		out := make([]IdleShare, 0, len(m))
		for _, k := range slices.Sorted(maps.Keys(m)) {
			out = append(out, *m[k])
		}
		slices.SortStableFunc(out, func(a, b IdleShare) int { return cmp.Compare(b.GPUHours, a.GPUHours) })
		return out[:min(n, len(out))]
	}
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		m := map[string]*IdleShare{}
		for range r.IntN(40) {
			name := fmt.Sprintf("job-%d", r.IntN(60))
			m[name] = &IdleShare{Name: name, GPUHours: float64(r.IntN(6)) / 2}
		}
		for _, n := range []int{0, 1, 5, 100} {
			assert.Equal(t, sorted(m, n), topIdle(m, n), "round %d, top %d", round, n)
		}
	}
}

// TestAddRunsNeverChangesAListHandedOut: runs that end after the last
// extend the list in place once; a second list from the same one (two
// loads at once) copies, so neither changes what the other handed out.
func TestAddRunsNeverChangesAListHandedOut(t *testing.T) {
	t0 := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	run := func(key string, ended time.Duration) store.AccountedRun {
		return store.AccountedRun{LedgerRow: store.LedgerRow{RunKey: key, EndedAt: t0.Add(ended)}}
	}
	list := func(runs ...store.AccountedRun) runList { return runList{runs: runs, extended: new(atomic.Bool)} }
	keys := func(l runList) []string {
		var out []string
		for _, r := range l.runs {
			out = append(out, r.RunKey)
		}
		return out
	}
	base := list(make([]store.AccountedRun, 0, 8)...)
	base.runs = append(base.runs, run("a", 1), run("b", 2))

	one := addRuns(base, list(run("c", 3)))
	assert.Equal(t, []string{"a", "b", "c"}, keys(one))
	assert.Same(t, &base.runs[0], &one.runs[0], "extended in place")
	two := addRuns(base, list(run("d", 4)))
	assert.Equal(t, []string{"a", "b", "d"}, keys(two))
	assert.Equal(t, []string{"a", "b", "c"}, keys(one), "the first list is as it was handed out")
	assert.NotSame(t, &base.runs[0], &two.runs[0], "the second copied")

	late := addRuns(one, list(run("x", 0), run("y", 5)))
	assert.Equal(t, []string{"x", "a", "b", "c", "y"}, keys(late), "a run recorded late goes where it ended")
	assert.Equal(t, []string{"a", "b", "c"}, keys(one))
	assert.Equal(t, keys(one), keys(addRuns(one, list())), "nothing to add")
}

// TestReportTopJobsAsSortingAllGives: a report's top jobs by cost and by
// idle money are those sorting every job gives, ties by namespace/job,
// jobs with none left out.
func TestReportTopJobsAsSortingAllGives(t *testing.T) {
	sortedTop := func(jobs []JobCost, key func(JobCost) money.USD) []JobCost {
		out := slices.Clone(jobs)
		slices.SortFunc(out, func(a, b JobCost) int {
			return cmp.Or(cmp.Compare(key(b), key(a)), cmp.Compare(a.Namespace+"/"+a.Job, b.Namespace+"/"+b.Job))
		})
		out = slices.DeleteFunc(out, func(j JobCost) bool { return key(j) <= 0 })
		return slices.Clone(out[:min(topJobsShown, len(out))])
	}
	r := rand.New(rand.NewPCG(3, 4))
	for round := range 100 {
		s := NewSummary(time.Time{}, time.Time{}, topJobsShown)
		for range r.IntN(30) {
			hours := float64(r.IntN(3))
			useful := hours * float64(r.IntN(3)) / 2
			s.Add(store.LedgerRow{Team: "vision", Namespace: []string{"team-a", "team-a-b", "team-b"}[r.IntN(3)],
				JobName: fmt.Sprintf("job-%d", r.IntN(8)), Outcome: OutcomeSucceeded, AllocatedGPUHours: hours,
				MeasuredGPUHours: &hours, UsefulGPUHours: &useful, CostUSD: money.USD(r.IntN(3)) * money.Dollar})
		}
		all := make([]JobCost, 0, len(s.jobs))
		for _, j := range s.jobs {
			all = append(all, *j)
		}
		rep := s.Report()
		assert.Equal(t, sortedTop(all, func(j JobCost) money.USD { return j.CostUSD }), rep.TopByCost, "round %d: by cost", round)
		assert.Equal(t, sortedTop(all, func(j JobCost) money.USD { return j.IdleUSD }), rep.TopByIdle, "round %d: by idle money", round)
	}
}

const topJobsShown = 5

// TestSummaryCloneLeavesTheOriginalAsItWas: runs added to a clone (and to
// a clone of a clone) never change the summary cloned or its report.
func TestSummaryCloneLeavesTheOriginalAsItWas(t *testing.T) {
	t0 := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	run := func(ns, job string, usd money.USD) store.LedgerRow {
		hours, useful := 2.0, 1.0
		return store.LedgerRow{Team: "vision", Namespace: ns, JobName: job, Outcome: OutcomeSucceeded, AllocatedGPUHours: hours,
			MeasuredGPUHours: &hours, UsefulGPUHours: &useful, CostUSD: usd}
	}
	s := NewSummary(t0, t0.Add(time.Hour), 3)
	s.Add(run("team-a", "x", 4*money.Dollar))
	s.Add(run("team-a", "y", 2*money.Dollar))
	before := s.Report()

	c := s.Clone(t0.Add(2 * time.Hour))
	c.Add(run("team-a", "y", 6*money.Dollar))
	c.Add(run("team-b", "z", money.Dollar))
	assert.Equal(t, before, s.Report(), "the original is as it was")
	inClone := c.Report()
	assert.Equal(t, []string{"y", "x", "z"}, []string{inClone.TopByCost[0].Job, inClone.TopByCost[1].Job, inClone.TopByCost[2].Job})
	assert.Equal(t, 2, inClone.TopByCost[0].Runs)
	assert.Equal(t, t0.Add(2*time.Hour), inClone.To)

	cc := c.Clone(t0.Add(3 * time.Hour))
	cc.Add(run("team-a", "x", 10*money.Dollar))
	assert.Equal(t, inClone, c.Report(), "a clone of a clone leaves the clone as it was")
	assert.Equal(t, before, s.Report())
	assert.Equal(t, "x", cc.Report().TopByCost[0].Job)
	assert.Equal(t, 2, cc.Report().TopByCost[0].Runs)
}
