package web

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"k8s.io/utils/ptr"

	"github.com/gantry-dev/gantry/internal/money"
	"github.com/gantry-dev/gantry/internal/store"
	"github.com/gantry-dev/gantry/views"
)

// TestJobCostFigures checks the cost lines of the job page as a person reads them.
func TestJobCostFigures(t *testing.T) {
	gpuRow := func(outcome string, hours float64, cost money.USD) store.LedgerRow {
		return store.LedgerRow{Resource: "nvidia.com/gpu", GPUs: 8, Outcome: outcome, AllocatedGPUHours: hours,
			USDPerHour: 4 * money.Dollar, CostUSD: cost}
	}
	measuredRow := func(r store.LedgerRow, measured, useful float64) store.LedgerRow {
		r.MeasuredGPUHours, r.UsefulGPUHours, r.AvgUtilization = &measured, &useful, ptr.To(100*useful/measured)
		return r
	}
	cases := map[string]struct {
		runs    []store.LedgerRow
		ongoing *store.LedgerRow
		want    views.CostView
	}{
		"a running job wastes nothing": {
			ongoing: ptr.To(measuredRow(gpuRow("", 2, 8*money.Dollar), 2, 1)),
			want: views.CostView{Price: "$4.00 per GPU-hour", AllocatedHours: "2.00", UsefulHours: "1.00",
				Cost: "$8.00", IdleCost: "$4.00"},
		},
		"a preempted run before the running one is wasted, the running one is not": {
			runs:    []store.LedgerRow{measuredRow(gpuRow("evicted", 1, 4*money.Dollar), 1, 1)},
			ongoing: ptr.To(measuredRow(gpuRow("", 2, 8*money.Dollar), 2, 2)),
			want: views.CostView{Price: "$4.00 per GPU-hour", AllocatedHours: "3.00", UsefulHours: "3.00",
				Cost: "$12.00", IdleCost: "$0.00", Wasted: "$4.00"},
		},
		"a gap in the samples is unmeasured, not useful": {
			runs: []store.LedgerRow{measuredRow(gpuRow("succeeded", 4, 16*money.Dollar), 3, 3)},
			want: views.CostView{Price: "$4.00 per GPU-hour", AllocatedHours: "4.00", UsefulHours: "3.00",
				Cost: "$16.00", IdleCost: "$0.00", UnmeasuredHours: "1.00", UnmeasuredCost: "$4.00", Ended: true},
		},
		"a running job without any samples is all unmeasured": {
			ongoing: ptr.To(gpuRow("", 2, 8*money.Dollar)),
			want: views.CostView{Price: "$4.00 per GPU-hour", AllocatedHours: "2.00", UsefulHours: "0.00",
				Cost: "$8.00", IdleCost: "$0.00", UnmeasuredHours: "2.00", UnmeasuredCost: "$8.00"},
		},
		"a run seconds old before its first sample has no unmeasured line of zeros": {
			ongoing: ptr.To(gpuRow("", 0.001, 4000)),
			want: views.CostView{Price: "$4.00 per GPU-hour", AllocatedHours: "0.00", UsefulHours: "0.00",
				Cost: "$0.00", IdleCost: "$0.00"},
		},
		"a minute before the first sample is unmeasured": {
			ongoing: ptr.To(gpuRow("", 0.13, 520_000)),
			want: views.CostView{Price: "$4.00 per GPU-hour", AllocatedHours: "0.13", UsefulHours: "0.00",
				Cost: "$0.52", IdleCost: "$0.00", UnmeasuredHours: "0.13", UnmeasuredCost: "$0.52"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := jobQueueProps(jobQueue{Team: "vision", Name: "train", Runs: tc.runs, Ongoing: tc.ongoing, Now: time.Now()})
			if assert.NotNil(t, p.Cost) {
				assert.Equal(t, tc.want, *p.Cost)
			}
		})
	}
}
