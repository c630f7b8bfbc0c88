package cost_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gantry-dev/gantry/internal/cost"
	"github.com/gantry-dev/gantry/internal/devcluster/stacktest"
	"github.com/gantry-dev/gantry/internal/gpu"
	"github.com/gantry-dev/gantry/internal/kube"
	"github.com/gantry-dev/gantry/internal/money"
	"github.com/gantry-dev/gantry/internal/store"
)

const (
	h100      = "h100-sxm-ib-training"
	h100Price = 4.0
)

// TestFinishedRunCostsGPUsTimesDurationTimesPrice runs a simulated 60-second
// job on 8 H100 GPUs and checks its ledger row, its measured utilization,
// and that the row outlives the Job.
func TestFinishedRunCostsGPUsTimesDurationTimesPrice(t *testing.T) {
	env := stacktest.Stack(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	db := migratedStore(t)
	require.NoError(t, db.AddPrice(ctx, store.GPUPrice{Flavor: h100, Resource: "nvidia.com/gpu", EffectiveFrom: time.Now().Add(-time.Hour), USDPerHour: h100Price * money.Dollar}))
	// A price taking effect while the job runs prices the rest of the run.
	change := time.Now().Add(35 * time.Second).Truncate(time.Second)
	require.NoError(t, db.AddPrice(ctx, store.GPUPrice{Flavor: h100, Resource: "nvidia.com/gpu", EffectiveFrom: change, USDPerHour: 6 * money.Dollar}))
	// A later price must not change this run's cost.
	require.NoError(t, db.AddPrice(ctx, store.GPUPrice{Flavor: h100, Resource: "nvidia.com/gpu", EffectiveFrom: time.Now().Add(24 * time.Hour), USDPerHour: 99 * money.Dollar}))

	team := env.Team(t, stacktest.TeamSpec{Quotas: map[string]corev1.ResourceList{
		h100: {"nvidia.com/gpu": resource.MustParse("8"), "cpu": resource.MustParse("32"), "memory": resource.MustParse("128Gi")},
	}})
	clients, err := kube.NewClients(env.RESTConfig)
	require.NoError(t, err)
	jobs, err := kube.NewJobCache(clients.Kube, clients.Kueue, 0)
	require.NoError(t, err)
	jobs.Start(ctx)
	require.NoError(t, jobs.WaitForSync(ctx))
	metrics, err := gpu.New(env.PrometheusURL)
	require.NoError(t, err)
	log := slog.New(slog.DiscardHandler)
	// Two ledgers stand for two replicas running the loop at once.
	ledgers := []*cost.Ledger{
		{Store: db, Workloads: jobs, Utilization: metrics, Log: log},
		{Store: db, Workloads: jobs, Utilization: metrics, Log: log},
	}

	job := stacktest.CompliantJob(team.Name, "train", corev1.ResourceList{
		"nvidia.com/gpu": resource.MustParse("8"), "cpu": resource.MustParse("8"), "memory": resource.MustParse("32Gi"),
	})
	stacktest.OnPool(job, h100)
	job.Spec.Template.Annotations = map[string]string{"gantry.dev/simulate-duration": "60s"}
	_, err = env.Kube.BatchV1().Jobs(team.Namespace()).Create(ctx, job, metav1.CreateOptions{})
	require.NoError(t, err)

	// While it runs, Prometheus has its DCGM utilization.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		wls, err := jobs.WorkloadsOwnedBy(team.Namespace(), "Job", "train")
		require.NoError(c, err)
		require.Len(c, wls, 1)
		admitted, ok := cost.AdmittedAt(wls[0])
		require.True(c, ok, "admitted")
		u, err := metrics.JobUsage(ctx, gpu.Job{Namespace: team.Namespace(), Name: "train", Kind: "Job"}, admitted, time.Now())
		require.NoError(c, err)
		require.True(c, u.HasData, "utilization scraped")
		assert.InDelta(c, 67.5, u.Utilization, 27.5, "simulated busy GPUs are 40-95 %")
		assert.Positive(c, u.PowerWatts)
		assert.Positive(c, u.MemoryMiB)
	}, 45*time.Second, time.Second)

	var row store.LedgerRow
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var wg sync.WaitGroup
		for _, l := range ledgers {
			wg.Go(func() { _, _ = l.Scan(ctx) })
		}
		wg.Wait()
		rows, err := db.JobRuns(ctx, team.Namespace(), "train")
		require.NoError(c, err)
		require.Len(c, rows, 1, "one row although two ledgers scanned")
		row = rows[0]
	}, 2*time.Minute, time.Second)

	t.Logf("ledger: %d GPUs × %.1f s, price change at +%.1f s: $%s, utilization %v", row.GPUs,
		row.EndedAt.Sub(row.AdmittedAt).Seconds(), change.Sub(row.AdmittedAt).Seconds(), row.CostUSD.Decimal(), ptr.Deref(row.AvgUtilization, -1))
	assert.Equal(t, cost.OutcomeSucceeded, row.Outcome)
	assert.Equal(t, int64(8), row.GPUs)
	assert.Equal(t, h100, row.Flavor)
	assert.Equal(t, team.Name, row.Team)
	require.True(t, change.After(row.AdmittedAt) && change.Before(row.EndedAt), "the price changed while the job ran")
	assert.Equal(t, "6.000000", row.USDPerHour.Decimal(), "price in effect when it ended")
	// $4 per GPU-hour until the change, $6 after, to the micro-dollar
	// (Postgres keeps microseconds: whole-µs durations).
	before, after := change.Sub(row.AdmittedAt), row.EndedAt.Sub(change)
	want := (h100Price*money.Dollar).For(8, before) + (6*money.Dollar).For(8, after)
	assert.Equal(t, want.Decimal(), row.CostUSD.Decimal(), "cost split at the price change")
	// The job page prices its run with the same rule.
	all, err := db.AllPrices(ctx)
	require.NoError(t, err)
	var hist []store.GPUPrice
	for i := len(all) - 1; i >= 0; i-- {
		if all[i].Flavor == h100 {
			hist = append(hist, all[i])
		}
	}
	page, _ := cost.Price(cost.Run{Allocation: cost.Allocation{GPUs: 8}, Admitted: row.AdmittedAt, Ended: row.EndedAt}, hist)
	assert.Equal(t, row.CostUSD, page, "page and ledger agree")
	require.NotNil(t, row.MeasuredGPUHours, "measured hours kept")
	assert.InDelta(t, row.AllocatedGPUHours, *row.MeasuredGPUHours, 8*15.0/3600, "samples over nearly all the run")
	require.NotNil(t, row.AvgUtilization, "utilization measured over the run")
	assert.InDelta(t, 67.5, *row.AvgUtilization, 27.5)

	require.NoError(t, env.Kube.BatchV1().Jobs(team.Namespace()).Delete(ctx, "train", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}))
	require.Eventually(t, func() bool {
		wls, err := jobs.WorkloadsOwnedBy(team.Namespace(), "Job", "train")
		return err == nil && len(wls) == 0
	}, time.Minute, 250*time.Millisecond, "workload deleted with the job")
	_, err = ledgers[0].Scan(ctx)
	require.NoError(t, err)
	rows, err := db.LedgerRows(ctx, team.Name, time.Now().Add(-time.Hour), time.Now().Add(time.Minute))
	require.NoError(t, err)
	require.Len(t, rows, 1, "the run stays in the ledger after the Job is deleted")
	assert.Equal(t, row.RunKey, rows[0].RunKey)
	assert.Equal(t, row.CostUSD, rows[0].CostUSD)
}
