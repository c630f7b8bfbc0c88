package web

import (
	"context"
	"fmt"
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/gantry-dev/gantry/internal/cost"
	"github.com/gantry-dev/gantry/internal/gpu"
	"github.com/gantry-dev/gantry/internal/money"
	"github.com/gantry-dev/gantry/internal/queue"
	"github.com/gantry-dev/gantry/internal/store"
)

// StatusDeps serve the queue, GPU and cost status of jobs, teams and the
// cluster. Everything but the visibility positions and Prometheus is read
// from informer caches and indexed ledger queries.
type StatusDeps struct {
	Reader queue.StatusReader
	Jobs   StatusWorkloads
	Costs  CostStore
	// GPU may be nil when no Prometheus is configured.
	GPU GPUMetrics
	// GPUWait is how long a job page waits for the job's GPU figures from
	// Prometheus before it shows them as still loading (its status panel's
	// next refresh brings them); zero waits for them. The JSON API always
	// waits.
	GPUWait time.Duration
	Pools   PoolReader
	// Accounting serves accepted results, cost per accepted unit and
	// shared costs; nil answers their pages and routes with 404.
	Accounting AccountingService
}

// StatusWorkloads is the part of the job cache the status pages read.
type StatusWorkloads interface {
	Job(namespace, name string) (*batchv1.Job, error)
	WorkloadsOwnedBy(namespace, kind, name string) ([]*kueue.Workload, error)
	Pods(namespace, instance string) ([]*corev1.Pod, error)
	NamespaceWorkloads(namespace string) ([]*kueue.Workload, error)
	// NamespaceRunningWorkloads are the namespace's Workloads holding quota.
	NamespaceRunningWorkloads(namespace string) ([]*kueue.Workload, error)
}

// CostStore is the ledger and price table.
type CostStore interface {
	LedgerRows(ctx context.Context, team string, from, to time.Time) ([]store.LedgerRow, error)
	// EachLedgerRow hands over LedgerRows' rows that rec lets through one
	// at a time as they are read, for sums that need not hold them.
	EachLedgerRow(ctx context.Context, team string, from, to time.Time, rec store.Recorded, fn func(store.LedgerRow) error) error
	JobRuns(ctx context.Context, namespace, job string) ([]store.LedgerRow, error)
	WaitPercentiles(ctx context.Context, team string, from time.Time) ([]store.WaitPercentile, error)
	AllPrices(ctx context.Context) ([]store.GPUPrice, error)
	// LedgerVersion changes whenever the ledger does.
	LedgerVersion(ctx context.Context) (int64, error)
	// LedgerMark is the version and the count of rewrites: which rows
	// were recorded since figures were summed (store.LedgerMark).
	LedgerMark(ctx context.Context) (store.LedgerMark, error)
}

// GPUMetrics reads DCGM metrics from Prometheus.
type GPUMetrics interface {
	JobUsage(ctx context.Context, j gpu.Job, start, end time.Time) (gpu.Usage, error)
	NodeUtilization(ctx context.Context, at time.Time) (map[string]float64, error)
	MeasuredUse(ctx context.Context, j gpu.Job, start, end time.Time) (gpu.Measured, error)
}

// PoolReader reads node pools (ResourceFlavors) and their nodes from caches.
type PoolReader interface {
	ResourceFlavors() []*kueue.ResourceFlavor
	FlavorCapacity(rf *kueue.ResourceFlavor) (corev1.ResourceList, error)
	FlavorNodes(rf *kueue.ResourceFlavor) ([]string, error)
}

// prices is every price's history, oldest first, by flavor and resource.
type prices map[[2]string][]store.GPUPrice

// of prices a run as the ledger does: the price in effect over each part
// of it; last is the one in effect at its end.
func (p prices) of(r cost.Run) (total, last money.USD) {
	return cost.Price(r, p[[2]string{r.Flavor, r.Resource}])
}

func (h *handler) prices(ctx context.Context) (prices, error) {
	ps, err := h.Status.Costs.AllPrices(ctx)
	if err != nil {
		return nil, err
	}
	out := prices{}
	for _, p := range ps {
		k := [2]string{p.Flavor, p.Resource}
		out[k] = append(out[k], p)
	}
	for _, h := range out {
		slices.SortFunc(h, func(a, b store.GPUPrice) int { return a.EffectiveFrom.Compare(b.EffectiveFrom) })
	}
	return out, nil
}

func usd(v money.USD) string { return v.String() }

func hours(v float64) string { return fmt.Sprintf("%.2f", v) }

// wait says a duration in words a person reads at a glance.
func wait(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm %02ds", int(d.Minutes()), int(d.Seconds())%60)
	default:
		return fmt.Sprintf("%dh %02dm", int(d.Hours()), int(d.Minutes())%60)
	}
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

func pct(v float64) string { return fmt.Sprintf("%.0f%%", v) }

func mib(v float64) string { return fmt.Sprintf("%.1f GiB", v/1024) }

func watts(v float64) string { return fmt.Sprintf("%.0f W", v) }
