package cost

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/gantry-dev/gantry/internal/money"
	"github.com/gantry-dev/gantry/internal/store"
)

func row(job, outcome string, hours, price float64, util *float64) store.LedgerRow {
	return store.LedgerRow{Team: "vision", Namespace: "team-vision", JobName: job, Outcome: outcome, GPUs: 8,
		AllocatedGPUHours: hours, USDPerHour: money.FromFloat(price), CostUSD: money.FromFloat(hours * price), AvgUtilization: util}
}

// measured is a row with the given measured and useful GPU-hours.
func measured(r store.LedgerRow, measured, useful float64) store.LedgerRow {
	r.MeasuredGPUHours, r.UsefulGPUHours = &measured, &useful
	return r
}

func TestSummarize(t *testing.T) {
	cases := map[string]struct {
		rows []store.LedgerRow
		want Spend
	}{
		"nothing": {want: Spend{}},
		"a busy success and an idle failure": {
			rows: []store.LedgerRow{row("a", OutcomeSucceeded, 10, 4, ptr.To(75.0)), row("b", OutcomeFailed, 5, 4, ptr.To(10.0))},
			want: Spend{Runs: 2, SucceededRuns: 1, FailedRuns: 1, AllocatedGPUHours: 15, UsefulGPUHours: 8,
				IdleGPUHours: 7, CostUSD: 60 * money.Dollar, FailedCostUSD: 20 * money.Dollar, IdleCostUSD: 28 * money.Dollar,
				CostPerSuccessUSD: 60 * money.Dollar},
		},
		// Before: a run without samples counted as fully useful.
		"unmeasured runs are unmeasured, not useful; evictions are wasted": {
			rows: []store.LedgerRow{row("a", OutcomeEvicted, 2, 1.2, nil)},
			want: Spend{Runs: 1, FailedRuns: 1, AllocatedGPUHours: 2, UnmeasuredGPUHours: 2,
				CostUSD: 2_400_000, FailedCostUSD: 2_400_000, UnmeasuredCostUSD: 2_400_000},
		},
		"a gap in the samples is unmeasured; idle is measured minus useful": {
			// 8 GPU-hours: 6 measured at 50 %, 2 without samples.
			rows: []store.LedgerRow{measured(row("a", OutcomeSucceeded, 8, 4, ptr.To(50.0)), 6, 3)},
			want: Spend{Runs: 1, SucceededRuns: 1, AllocatedGPUHours: 8, UsefulGPUHours: 3, IdleGPUHours: 3, UnmeasuredGPUHours: 2,
				CostUSD: 32 * money.Dollar, IdleCostUSD: 12 * money.Dollar, UnmeasuredCostUSD: 8 * money.Dollar, CostPerSuccessUSD: 32 * money.Dollar},
		},
		"a running job has no wasted cost": {
			rows: []store.LedgerRow{row("a", "", 3, 4, ptr.To(100.0))},
			want: Spend{Runs: 1, AllocatedGPUHours: 3, UsefulGPUHours: 3, CostUSD: 12 * money.Dollar},
		},
		"a stopped run is not wasted; a failed earlier run of the same job is": {
			rows: []store.LedgerRow{row("a", OutcomeFailed, 1, 4, ptr.To(100.0)), row("a", OutcomeStopped, 2, 4, ptr.To(100.0)), row("a", "", 1, 4, ptr.To(100.0))},
			want: Spend{Runs: 3, FailedRuns: 1, AllocatedGPUHours: 4, UsefulGPUHours: 4, CostUSD: 16 * money.Dollar, FailedCostUSD: 4 * money.Dollar},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Summarize(tc.rows, time.Time{}, time.Time{}, 5).Spend
			assert.InDelta(t, tc.want.UsefulGPUHours, got.UsefulGPUHours, 1e-9)
			assert.InDelta(t, tc.want.IdleGPUHours, got.IdleGPUHours, 1e-9)
			assert.InDelta(t, tc.want.UnmeasuredGPUHours, got.UnmeasuredGPUHours, 1e-9)
			got.UsefulGPUHours, got.IdleGPUHours, got.UnmeasuredGPUHours = tc.want.UsefulGPUHours, tc.want.IdleGPUHours, tc.want.UnmeasuredGPUHours
			// Money is exact: no tolerance.
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestTopJobs(t *testing.T) {
	rep := Summarize([]store.LedgerRow{
		row("cheap", OutcomeSucceeded, 1, 4, ptr.To(100.0)),
		row("dear", OutcomeSucceeded, 10, 4, ptr.To(90.0)),
		row("idle", OutcomeSucceeded, 5, 4, ptr.To(0.0)),
		row("dear", OutcomeFailed, 1, 4, ptr.To(90.0)),
	}, time.Time{}, time.Time{}, 2)
	assert.Equal(t, []string{"dear", "idle"}, jobNames(rep.TopByCost))
	assert.Equal(t, 2, rep.TopByCost[0].Runs)
	assert.Equal(t, []string{"idle", "dear"}, jobNames(rep.TopByIdle))
}

func jobNames(js []JobCost) []string {
	var out []string
	for _, j := range js {
		out = append(out, j.Job)
	}
	return out
}

func wl(conds ...metav1.Condition) *kueue.Workload {
	created := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	return &kueue.Workload{
		ObjectMeta: metav1.ObjectMeta{Name: "job-train-1", Namespace: "team-vision", UID: "u1", CreationTimestamp: metav1.NewTime(created),
			OwnerReferences: []metav1.OwnerReference{{Kind: "Job", Name: "train", Controller: ptr.To(true)}}},
		Status: kueue.WorkloadStatus{Conditions: conds, Admission: &kueue.Admission{PodSetAssignments: []kueue.PodSetAssignment{{
			Name:          "main",
			Flavors:       map[corev1.ResourceName]kueue.ResourceFlavorReference{"nvidia.com/gpu": "h100", "cpu": "h100"},
			ResourceUsage: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8"), "cpu": resource.MustParse("16")},
		}}}},
	}
}

func cond(typ, reason string, at time.Time) metav1.Condition {
	return metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: reason, LastTransitionTime: metav1.NewTime(at)}
}

func TestRuns(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 10, 5, 0, 0, time.UTC)
	admitted := cond(kueue.WorkloadAdmitted, "Admitted", t0)

	r, ok := Finished(wl(admitted, cond(kueue.WorkloadFinished, kueue.WorkloadFinishedReasonSucceeded, t0.Add(time.Minute))))
	assert.True(t, ok)
	assert.Equal(t, Allocation{Flavor: "h100", Resource: "nvidia.com/gpu", GPUs: 8}, r.Allocation)
	assert.Equal(t, OutcomeSucceeded, r.Outcome)
	assert.InDelta(t, 8.0/60, r.GPUHours(), 1e-9)
	assert.Equal(t, 5*time.Minute, r.Wait())
	assert.Equal(t, "train", r.JobName)
	assert.Equal(t, "u1@"+itoa(t0.Unix()), r.Key())

	r, ok = Finished(wl(admitted, cond(kueue.WorkloadFinished, kueue.WorkloadFinishedReasonFailed, t0.Add(time.Minute))))
	assert.True(t, ok)
	assert.Equal(t, OutcomeFailed, r.Outcome)

	_, ok = Finished(wl(admitted))
	assert.False(t, ok, "still running")

	r, ok = Evicted(wl(admitted), wl(admitted, cond(kueue.WorkloadEvicted, kueue.WorkloadEvictedByPreemption, t0.Add(30*time.Second))))
	assert.True(t, ok)
	assert.Equal(t, OutcomeEvicted, r.Outcome)
	assert.Equal(t, 30*time.Second, r.Duration())

	_, ok = Evicted(wl(admitted), wl(admitted))
	assert.False(t, ok, "no eviction")

	deleted := wl(admitted)
	deleted.DeletionTimestamp = ptr.To(metav1.NewTime(t0.Add(2 * time.Minute)))
	r, ok = Deleted(deleted, t0.Add(time.Hour))
	assert.True(t, ok)
	assert.Equal(t, OutcomeStopped, r.Outcome)
	assert.Equal(t, 2*time.Minute, r.Duration(), "ends when it was deleted")
	stopped := Summarize([]store.LedgerRow{{Outcome: OutcomeStopped, AllocatedGPUHours: 1, CostUSD: 4 * money.Dollar}}, time.Time{}, time.Time{}, 1).Spend
	assert.Equal(t, 0, stopped.FailedRuns+stopped.SucceededRuns, "a stopped run is neither")
	assert.Equal(t, "$4.00", stopped.CostUSD.String())
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

func TestCPUOnlyFlavorIsTheFlavorOfItsCPU(t *testing.T) {
	w := wl(cond(kueue.WorkloadAdmitted, "Admitted", time.Date(2026, 11, 1, 10, 5, 0, 0, time.UTC)))
	w.Status.Admission.PodSetAssignments[0].Flavors = map[corev1.ResourceName]kueue.ResourceFlavorReference{
		"cpu": "cpu-pool", "memory": "a-memory-pool", "ephemeral-storage": "b-pool", "pods": "c-pool"}
	w.Status.Admission.PodSetAssignments[0].ResourceUsage = corev1.ResourceList{"cpu": resource.MustParse("4"), "memory": resource.MustParse("8Gi")}
	// Map order differs run to run: ask many times.
	for range 200 {
		a, ok := AllocationOf(w)
		assert.True(t, ok)
		if !assert.Equal(t, Allocation{Flavor: "cpu-pool"}, a) {
			return
		}
	}
	delete(w.Status.Admission.PodSetAssignments[0].Flavors, "cpu")
	for range 200 {
		a, _ := AllocationOf(w)
		if !assert.Equal(t, "b-pool", a.Flavor, "without cpu: the first resource by name (ephemeral-storage)") {
			return
		}
	}
}

func TestPriceIntegratesEachPriceOverItsPartOfTheRun(t *testing.T) {
	at := func(h int) time.Time { return time.Date(2031, 1, 1, h, 0, 0, 0, time.UTC) }
	price := func(h int, usd string) store.GPUPrice {
		v, err := money.Parse(usd)
		if err != nil {
			t.Fatal(err)
		}
		return store.GPUPrice{EffectiveFrom: at(h), USDPerHour: v}
	}
	run := Run{Allocation: Allocation{GPUs: 2}, Admitted: at(10), Ended: at(13)}
	cases := map[string]struct {
		prices          []store.GPUPrice
		run             Run
		wantTotal, last string
	}{
		"one price":                   {[]store.GPUPrice{price(0, "2.00")}, run, "12.000000", "2.000000"},
		"a change in the middle":      {[]store.GPUPrice{price(0, "2.00"), price(11, "3.50")}, run, "18.000000", "3.500000"}, // 2×1×2 + 2×2×3.5
		"a change after it ended":     {[]store.GPUPrice{price(0, "2.00"), price(14, "9")}, run, "12.000000", "2.000000"},
		"older prices do not count":   {[]store.GPUPrice{price(0, "1"), price(5, "2.00"), price(12, "3")}, run, "14.000000", "3.000000"},
		"free before the first price": {[]store.GPUPrice{price(12, "3")}, run, "6.000000", "3.000000"},
		"a price in micro-dollars": {[]store.GPUPrice{price(0, "0.000001")},
			Run{Allocation: Allocation{GPUs: 1}, Admitted: at(10), Ended: at(10).Add(90 * time.Minute)}, "0.000002", "0.000001"}, // 1.5 µ$ rounds half up
		"a running job priced like an ended one": {[]store.GPUPrice{price(0, "2.00"), price(11, "3.50")},
			Run{Allocation: Allocation{GPUs: 2}, Admitted: at(10), Ended: at(12)}, "11.000000", "3.500000"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			total, last := Price(tc.run, tc.prices)
			assert.Equal(t, tc.wantTotal, total.Decimal())
			assert.Equal(t, tc.last, last.Decimal())
		})
	}
}

func TestMoneySumsAreExactOverTenThousandRows(t *testing.T) {
	rows := make([]store.LedgerRow, 10_000)
	for i := range rows {
		// $0.10 and $0.20 have no exact float; 5,000 of each is $1,500.00 to the micro-dollar.
		rows[i] = store.LedgerRow{Outcome: OutcomeFailed, AllocatedGPUHours: 1, CostUSD: money.USD(100_000 * (1 + i%2))}
	}
	s := Summarize(rows, time.Time{}, time.Time{}, 0).Spend
	assert.Equal(t, "1500.000000", s.CostUSD.Decimal())
	assert.Equal(t, "$1500.00", s.FailedCostUSD.String())
}

// A report cached for a page keeps its top lists, not every job of the
// month behind them.
func TestSummarizeTopListsHoldOnlyTheTopJobs(t *testing.T) {
	var rows []store.LedgerRow
	for i := range 1000 {
		rows = append(rows, measured(row("job-"+strconv.Itoa(i), "succeeded", float64(1+i%7), 2, nil), float64(1+i%7), 0.5))
	}
	rep := Summarize(rows, time.Time{}, time.Now(), 5)
	assert.Len(t, rep.TopByCost, 5)
	assert.Equal(t, 5, cap(rep.TopByCost), "top by cost holds 5 jobs, not a view of all 1,000")
	assert.Len(t, rep.TopByIdle, 5)
	assert.Equal(t, 5, cap(rep.TopByIdle), "top by idle holds 5 jobs, not a view of all 1,000")
}
