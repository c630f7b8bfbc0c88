package cost_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/gantry-dev/gantry/internal/cost"
	"github.com/gantry-dev/gantry/internal/money"
	"github.com/gantry-dev/gantry/internal/store"
)

var errKilled = errors.New("leader killed")

// cachedWorkloads is a replica's Workload informer cache.
type cachedWorkloads []*kueue.Workload

func (c cachedWorkloads) AllWorkloads() ([]*kueue.Workload, error) { return c, nil }

// dyingLedgerStore is the database of a leader that is killed during its
// next ledger write after `left` writes: before the row is inserted, or
// after the insert committed and before the leader learnt it. Dead, it
// writes nothing more.
type dyingLedgerStore struct {
	*store.Store
	afterInsert bool
	mu          sync.Mutex
	left        int
	dead        bool
}

func (d *dyingLedgerStore) RecordRun(ctx context.Context, r store.LedgerRow) (bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.dead {
		return false, errKilled
	}
	if d.left > 0 {
		d.left--
		return d.Store.RecordRun(ctx, r)
	}
	d.dead = true
	if d.afterInsert {
		if _, err := d.Store.RecordRun(ctx, r); err != nil {
			return false, err
		}
	}
	return false, errKilled
}

const (
	ledgerFlavor = "h100-sxm-ib-training"
	ledgerGPU    = corev1.ResourceName("nvidia.com/gpu")
)

// admittedWorkload is workload i of team vision holding 2 GPUs since admitted.
func admittedWorkload(i int, admitted time.Time) *kueue.Workload {
	return &kueue.Workload{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("job-job-%d", i), Namespace: "team-vision", UID: types.UID(fmt.Sprintf("uid-%d", i)),
			CreationTimestamp: metav1.NewTime(admitted.Add(-time.Minute)),
			OwnerReferences:   []metav1.OwnerReference{{Kind: "Job", Name: fmt.Sprintf("job-%d", i), Controller: ptr.To(true)}}},
		Status: kueue.WorkloadStatus{
			Admission: &kueue.Admission{PodSetAssignments: []kueue.PodSetAssignment{{
				Flavors:       map[corev1.ResourceName]kueue.ResourceFlavorReference{ledgerGPU: ledgerFlavor},
				ResourceUsage: corev1.ResourceList{ledgerGPU: resource.MustParse("2")}}}},
			Conditions: []metav1.Condition{{Type: kueue.WorkloadAdmitted, Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(admitted)}},
		},
	}
}

func finishedAfter(wl *kueue.Workload, admitted time.Time, d time.Duration) *kueue.Workload {
	wl = wl.DeepCopy()
	wl.Status.Conditions = append(wl.Status.Conditions, metav1.Condition{Type: kueue.WorkloadFinished, Status: metav1.ConditionTrue,
		Reason: kueue.WorkloadFinishedReasonSucceeded, LastTransitionTime: metav1.NewTime(admitted.Add(d))})
	return wl
}

// TestLeaderKilledMidLedgerWritesEachRunOnce: a leader writing the ledger
// is killed after five rows, its sixth row either not written or written
// without the leader knowing; then a new leader and an overlapping old one
// scan the same cache at once, and both replicas' informer hooks see the
// eviction. The ledger has one row per run (a workload evicted and
// admitted again has one per admission) and its total is the sum of the
// runs: 12 runs of 2 GPUs for 10, 20 … 120 minutes and the evicted
// workload's 30 and 20 minutes, at $3 per GPU-hour, $83.
func TestLeaderKilledMidLedgerWritesEachRunOnce(t *testing.T) {
	for name, afterInsert := range map[string]bool{"before its insert": false, "after its insert committed": true} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			db := migratedStore(t)
			t0 := time.Date(2026, 11, 2, 8, 0, 0, 0, time.UTC)
			require.NoError(t, db.AddPrice(ctx, store.GPUPrice{Flavor: ledgerFlavor, Resource: string(ledgerGPU), EffectiveFrom: t0.Add(-24 * time.Hour), USDPerHour: 3 * money.Dollar}))

			var cache cachedWorkloads
			want := map[string]bool{}
			for i := range 12 {
				admitted := t0.Add(time.Duration(i) * time.Minute)
				cache = append(cache, finishedAfter(admittedWorkload(i, admitted), admitted, time.Duration(i+1)*10*time.Minute))
				want[fmt.Sprintf("uid-%d@%d", i, admitted.Unix())] = true
			}
			first, again := t0, t0.Add(time.Hour)
			before := admittedWorkload(12, first)
			evicted := before.DeepCopy()
			evicted.Status.Admission = nil
			evicted.Status.Conditions = []metav1.Condition{
				{Type: kueue.WorkloadAdmitted, Status: metav1.ConditionFalse, LastTransitionTime: metav1.NewTime(first.Add(30 * time.Minute))},
				{Type: kueue.WorkloadEvicted, Status: metav1.ConditionTrue, Reason: "Preempted", Message: "preempted by a higher priority workload",
					LastTransitionTime: metav1.NewTime(first.Add(30 * time.Minute))}}
			cache = append(cache, finishedAfter(admittedWorkload(12, again), again, 20*time.Minute))
			want[fmt.Sprintf("uid-12@%d", first.Unix())], want[fmt.Sprintf("uid-12@%d", again.Unix())] = true, true

			ledger := func(s cost.LedgerStore) *cost.Ledger {
				return &cost.Ledger{Store: s, Workloads: cache, Log: slog.New(slog.DiscardHandler)}
			}
			dying := ledger(&dyingLedgerStore{Store: db, afterInsert: afterInsert, left: 5})
			dying.Observe(ctx, before, evicted)
			_, err := dying.Scan(ctx)
			require.ErrorIs(t, err, errKilled)
			rows, err := db.LedgerRows(ctx, "vision", t0.Add(-time.Hour), t0.Add(24*time.Hour))
			require.NoError(t, err)
			written := 5
			if afterInsert {
				written = 6
			}
			require.Len(t, rows, written, "the killed leader wrote these before it died")

			// The next leader takes over while the old one, stalled rather
			// than dead, still scans; both replicas' hooks saw the eviction.
			next, old := ledger(db), ledger(db)
			next.Observe(ctx, before, evicted)
			var wg sync.WaitGroup
			for _, l := range []*cost.Ledger{next, old} {
				wg.Go(func() {
					_, err := l.Scan(ctx)
					assert.NoError(t, err)
				})
			}
			wg.Wait()
			n, err := ledger(db).Scan(ctx)
			require.NoError(t, err)
			assert.Zero(t, n, "a later leader finds every run recorded")

			rows, err = db.LedgerRows(ctx, "vision", t0.Add(-time.Hour), t0.Add(24*time.Hour))
			require.NoError(t, err)
			got := map[string]bool{}
			var total money.USD
			for _, r := range rows {
				assert.False(t, got[r.RunKey], "run %s written twice", r.RunKey)
				got[r.RunKey] = true
				total += r.CostUSD
			}
			assert.Equal(t, want, got, "one row per run: workload and admission")
			assert.Equal(t, "$83.00", total.String(), "the ledger's total is the runs' cost, nothing counted twice")
		})
	}
}
