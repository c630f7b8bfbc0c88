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

	"github.com/gantry-dev/gantry/internal/store"
)

func row(job, outcome string, hours, price float64, util *float64) store.LedgerRow {
	return store.LedgerRow{Team: "vision", Namespace: "team-vision", JobName: job, Outcome: outcome, GPUs: 8,
		AllocatedGPUHours: hours, USDPerHour: price, CostUSD: hours * price, AvgUtilization: util}
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
				IdleGPUHours: 7, CostUSD: 60, FailedCostUSD: 20, IdleCostUSD: 28, CostPerSuccessUSD: 60},
		},
		"unmeasured runs count as useful; evictions are wasted": {
			rows: []store.LedgerRow{row("a", OutcomeEvicted, 2, 1.2, nil)},
			want: Spend{Runs: 1, FailedRuns: 1, AllocatedGPUHours: 2, UsefulGPUHours: 2, CostUSD: 2.4, FailedCostUSD: 2.4},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Summarize(tc.rows, time.Time{}, time.Time{}, 5).Spend
			assert.InDelta(t, tc.want.CostUSD, got.CostUSD, 1e-9)
			assert.InDelta(t, tc.want.IdleCostUSD, got.IdleCostUSD, 1e-9)
			assert.InDelta(t, tc.want.UsefulGPUHours, got.UsefulGPUHours, 1e-9)
			got.CostUSD, got.IdleCostUSD, got.UsefulGPUHours = tc.want.CostUSD, tc.want.IdleCostUSD, tc.want.UsefulGPUHours
			assert.InDelta(t, tc.want.IdleGPUHours, got.IdleGPUHours, 1e-9)
			got.IdleGPUHours = tc.want.IdleGPUHours
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
	stopped := Summarize([]store.LedgerRow{{Outcome: OutcomeStopped, AllocatedGPUHours: 1, CostUSD: 4}}, time.Time{}, time.Time{}, 1).Spend
	assert.Equal(t, 0, stopped.FailedRuns+stopped.SucceededRuns, "a stopped run is neither")
	assert.InDelta(t, 4.0, stopped.CostUSD, 1e-9)
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }
