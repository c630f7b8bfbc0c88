package web

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/gantry-dev/gantry/internal/catalog"
	"github.com/gantry-dev/gantry/internal/kube"
	"github.com/gantry-dev/gantry/internal/money"
	"github.com/gantry-dev/gantry/internal/naming"
	"github.com/gantry-dev/gantry/internal/queue"
	"github.com/gantry-dev/gantry/internal/store"
	"github.com/gantry-dev/gantry/views"
)

// benchWorkloads is how many workloads the benchmarks put in the fake
// informer stores: the 10,000, in one team.
const (
	benchWorkloads = 10000
	benchUsers     = 50
	benchTeam      = "vision"
)

// benchCluster is an in-memory stand-in for the informer caches, indexed
// the way kube.JobCache is (by namespace, owner and instance).
type benchCluster struct {
	jobs   map[string]*batchv1.Job
	byNS   map[string][]*kueue.Workload
	owned  map[string][]*kueue.Workload
	pods   map[string][]*corev1.Pod
	queues []*kueue.ClusterQueue
	ledger []store.LedgerRow
	// index orders the jobs as kube.JobCache does; running holds the
	// admitted workloads by namespace.
	index   *kube.JobIndex
	running map[string][]*kueue.Workload
}

func newBenchCluster(n int) *benchCluster {
	c := &benchCluster{jobs: map[string]*batchv1.Job{}, byNS: map[string][]*kueue.Workload{}, owned: map[string][]*kueue.Workload{}, pods: map[string][]*corev1.Pod{},
		index: kube.NewJobIndex(), running: map[string][]*kueue.Workload{}}
	ns := "team-" + benchTeam
	now := time.Now()
	for i := range n {
		name := fmt.Sprintf("train-%05d", i)
		created := metav1.NewTime(now.Add(-time.Duration(i) * time.Minute))
		labels := map[string]string{naming.LabelTeam: benchTeam, naming.LabelOwner: "alice", naming.LabelPool: "h100-sxm-ib-training"}
		c.jobs[ns+"/"+name] = &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels, CreationTimestamp: created}}
		wl := &kueue.Workload{ObjectMeta: metav1.ObjectMeta{Name: "job-" + name, Namespace: ns, UID: types.UID(fmt.Sprint(i)), CreationTimestamp: created,
			OwnerReferences: []metav1.OwnerReference{{Kind: "Job", Name: name}}}, Spec: kueue.WorkloadSpec{QueueName: "default"}}
		if i%3 != 0 { // two in three admitted and running
			wl.Status.Conditions = []metav1.Condition{
				{Type: kueue.WorkloadQuotaReserved, Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(created.Add(time.Minute))},
				{Type: kueue.WorkloadAdmitted, Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(created.Add(time.Minute))},
			}
			wl.Status.Admission = &kueue.Admission{ClusterQueue: "team-vision", PodSetAssignments: []kueue.PodSetAssignment{{Name: "main",
				Flavors:       map[corev1.ResourceName]kueue.ResourceFlavorReference{"nvidia.com/gpu": "h100-sxm-ib-training"},
				ResourceUsage: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}}}
		} else {
			wl.Status.Conditions = []metav1.Condition{{Type: kueue.WorkloadQuotaReserved, Status: metav1.ConditionFalse,
				Message: "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor h100-sxm-ib-training, 1 more needed"}}
		}
		c.byNS[ns] = append(c.byNS[ns], wl)
		if wl.Status.Admission != nil {
			c.running[ns] = append(c.running[ns], wl)
		}
		ref, _ := kube.JobRefOf(c.jobs[ns+"/"+name])
		c.index.Add(ref)
		c.owned[ns+"/Job/"+name] = []*kueue.Workload{wl}
		c.pods[ns+"/"+name] = []*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: name + "-abcde", Namespace: ns}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}}
		if i < 2000 {
			c.ledger = append(c.ledger, store.LedgerRow{Team: benchTeam, Namespace: ns, JobName: name, Flavor: "h100-sxm-ib-training", GPUs: 8,
				Outcome: "succeeded", AdmittedAt: created.Time, EndedAt: now.Add(-time.Duration(i) * time.Second), WaitSeconds: float64(i % 600),
				AllocatedGPUHours: 8, USDPerHour: 4 * money.Dollar, CostUSD: 32 * money.Dollar})
		}
	}
	c.queues = []*kueue.ClusterQueue{{ObjectMeta: metav1.ObjectMeta{Name: "team-vision", Labels: map[string]string{naming.LabelTeam: benchTeam}},
		Spec: kueue.ClusterQueueSpec{CohortName: "gantry", ResourceGroups: []kueue.ResourceGroup{{CoveredResources: []corev1.ResourceName{"nvidia.com/gpu"},
			Flavors: []kueue.FlavorQuotas{{Name: "h100-sxm-ib-training", Resources: []kueue.ResourceQuota{{Name: "nvidia.com/gpu", NominalQuota: resource.MustParse("16")}}}}}}}}}
	return c
}

func (c *benchCluster) WorkloadsOwnedBy(ns, kind, name string) ([]*kueue.Workload, error) {
	return c.owned[ns+"/"+kind+"/"+name], nil
}
func (c *benchCluster) Pods(ns, instance string) ([]*corev1.Pod, error) {
	return c.pods[ns+"/"+instance], nil
}
func (c *benchCluster) NamespaceWorkloads(ns string) ([]*kueue.Workload, error) {
	return c.byNS[ns], nil
}
func (c *benchCluster) Job(ns, name string) (*batchv1.Job, error) {
	if j, ok := c.jobs[ns+"/"+name]; ok {
		return j, nil
	}
	return nil, &kube.APIError{Kind: kube.ErrNotFound, Err: fmt.Errorf("job %s not found", name)}
}
func (c *benchCluster) JobState(ns, name string) (kube.JobState, error) {
	j, err := c.Job(ns, name)
	if err != nil {
		return kube.JobState{}, err
	}
	return kube.StateOf(j), nil
}
func (c *benchCluster) StatefulSet(ns, name string) (*appsv1.StatefulSet, error) {
	return nil, &kube.APIError{Kind: kube.ErrNotFound, Err: fmt.Errorf("no statefulsets")}
}
func (c *benchCluster) Deployment(ns, name string) (*appsv1.Deployment, error) {
	return nil, &kube.APIError{Kind: kube.ErrNotFound, Err: fmt.Errorf("no deployments")}
}
func (c *benchCluster) ClusterQueue(name string) (*kueue.ClusterQueue, error) {
	return c.queues[0], nil
}
func (c *benchCluster) ClusterQueues() []*kueue.ClusterQueue         { return c.queues }
func (c *benchCluster) WorkloadByUID(string) (*kueue.Workload, bool) { return nil, false }
func (c *benchCluster) LedgerRows(_ context.Context, team string, from, to time.Time) ([]store.LedgerRow, error) {
	var out []store.LedgerRow
	for _, r := range c.ledger {
		if !r.EndedAt.Before(from) && r.EndedAt.Before(to) {
			out = append(out, r)
		}
	}
	return out, nil
}

// EachLedgerRow: the bench ledger's rows carry no version (Seq 0), as
// rows recorded before versions were kept: none was recorded after one.
func (c *benchCluster) EachLedgerRow(ctx context.Context, team string, from, to time.Time, rec store.Recorded, fn func(store.LedgerRow) error) error {
	if rec.After > 0 {
		return nil
	}
	rows, err := c.LedgerRows(ctx, team, from, to)
	if err != nil {
		return err
	}
	for _, r := range rows {
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}
func (c *benchCluster) JobRuns(_ context.Context, ns, job string) ([]store.LedgerRow, error) {
	return nil, nil
}
func (c *benchCluster) WaitPercentiles(_ context.Context, team string, from time.Time) ([]store.WaitPercentile, error) {
	var waits []float64
	for _, r := range c.ledger {
		if !r.AdmittedAt.Before(from) {
			waits = append(waits, r.WaitSeconds)
		}
	}
	return []store.WaitPercentile{{Flavor: "h100-sxm-ib-training", Runs: int64(len(waits)), P50: percentile(waits, 0.5), P95: percentile(waits, 0.95)}}, nil
}

func (c *benchCluster) AllPrices(context.Context) ([]store.GPUPrice, error) {
	return []store.GPUPrice{{Flavor: "h100-sxm-ib-training", Resource: "nvidia.com/gpu", USDPerHour: 4 * money.Dollar}}, nil
}

// benchHandler is a handler over the fake caches, as the portal wires it.
func benchHandler(c *benchCluster) *handler {
	return &handler{Deps: Deps{
		Now:    time.Now,
		Log:    slog.New(slog.DiscardHandler),
		Status: &StatusDeps{Reader: queue.StatusReader{Queues: c, Workloads: c}, Jobs: c, Costs: c},
	}, ledgerFigures: newLedgerFiguresCache()}
}

// runUsers runs page b.N times spread over benchUsers goroutines and reports
// the p50 and p99 latency of one page.
func runUsers(b *testing.B, page func() error) {
	b.Helper()
	var mu sync.Mutex
	lat := make([]time.Duration, 0, b.N)
	b.SetParallelism(max(1, benchUsers/runtime.GOMAXPROCS(0)))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var mine []time.Duration
		for pb.Next() {
			start := time.Now()
			if err := page(); err != nil {
				b.Error(err)
				return
			}
			mine = append(mine, time.Since(start))
		}
		mu.Lock()
		lat = append(lat, mine...)
		mu.Unlock()
	})
	b.StopTimer()
	slices.Sort(lat)
	if len(lat) > 0 {
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	}
}

// reportHeap reports the heap in use with the 10,000 workloads loaded: the
// portal's memory for its read model.
func reportHeap(b *testing.B) {
	b.Helper()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	b.ReportMetric(float64(m.HeapInuse)/(1<<20), "heap-MiB")
}

func BenchmarkTeamPage10k(b *testing.B) {
	c := newBenchCluster(benchWorkloads)
	h := benchHandler(c)
	defer runtime.KeepAlive(c)
	defer reportHeap(b)
	runUsers(b, func() error {
		ts, err := h.teamStatusOf(context.Background(), benchTeam)
		if err != nil {
			return err
		}
		return views.TeamStatusPage(views.Nav{}, teamStatusProps(ts)).Render(context.Background(), io.Discard)
	})
}

func BenchmarkJobStatus10k(b *testing.B) {
	c := newBenchCluster(benchWorkloads)
	h := benchHandler(c)
	defer runtime.KeepAlive(c)
	defer reportHeap(b)
	var i int64
	var mu sync.Mutex
	runUsers(b, func() error {
		mu.Lock()
		i++
		name := fmt.Sprintf("train-%05d", i%benchWorkloads)
		mu.Unlock()
		q, err := h.jobQueueOf(context.Background(), store.Launch{Team: benchTeam, Name: name, Namespace: "team-" + benchTeam, Kind: string(catalog.KindTraining)}, nil)
		if err != nil {
			return err
		}
		return views.JobStatusFragment(jobQueueProps(q)).Render(context.Background(), io.Discard)
	})
}
