package web

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/gantry-dev/gantry/internal/catalog"
	"github.com/gantry-dev/gantry/internal/kube"
	"github.com/gantry-dev/gantry/internal/launch"
	"github.com/gantry-dev/gantry/internal/money"
	"github.com/gantry-dev/gantry/internal/naming"
	"github.com/gantry-dev/gantry/internal/queue"
	"github.com/gantry-dev/gantry/internal/store"
	"github.com/gantry-dev/gantry/views"
)

func (c *benchCluster) NamespaceRunningWorkloads(ns string) ([]*kueue.Workload, error) {
	return c.running[ns], nil
}

func (c *benchCluster) JobRefs(q kube.JobQuery) ([]kube.JobRef, int, error) {
	refs, total := c.index.Page(q)
	return refs, total, nil
}

// LedgerVersion never changes: the bench ledger is written once.
func (c *benchCluster) LedgerVersion(context.Context) (int64, error) { return 1, nil }
func (c *benchCluster) LedgerMark(context.Context) (store.LedgerMark, error) {
	return store.LedgerMark{Version: 1}, nil
}

// The production-like cluster of issue 17, in the caches' shape: 10,000
// training jobs over three teams, 1,000 of them admitted and running one
// 8-GPU pod, 1,000 GPU nodes in one pool, and 10,000 ended runs in the
// month's ledger.
const (
	loadJobs    = 10_000
	loadRunning = 1_000
	loadNodes   = 1_000
	loadLedger  = 10_000
	loadPool    = "h100-sxm-ib-training"
)

var loadTeams = []string{"vision", "nlp", "speech"}

// loadCluster adds node pools to the bench cluster.
type loadCluster struct {
	*benchCluster
	flavors []*kueue.ResourceFlavor
	nodes   []*corev1.Node
}

func newLoadCluster() *loadCluster {
	c := &benchCluster{jobs: map[string]*batchv1.Job{}, byNS: map[string][]*kueue.Workload{}, owned: map[string][]*kueue.Workload{},
		pods: map[string][]*corev1.Pod{}, index: kube.NewJobIndex(), running: map[string][]*kueue.Workload{}}
	now := time.Now()
	monthStart := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	for i := range loadJobs {
		team := loadTeams[i%len(loadTeams)]
		ns := naming.Namespace(team)
		name := fmt.Sprintf("train-%05d", i)
		created := metav1.NewTime(now.Add(-time.Duration(loadJobs-i) * time.Minute))
		lbl := map[string]string{naming.LabelTeam: team, naming.LabelOwner: fmt.Sprintf("user-%02d", i%50), naming.LabelPool: loadPool}
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: lbl, CreationTimestamp: created}}
		c.jobs[ns+"/"+name] = job
		ref, _ := kube.JobRefOf(job)
		c.index.Add(ref)
		wl := &kueue.Workload{ObjectMeta: metav1.ObjectMeta{Name: "job-" + name, Namespace: ns, UID: types.UID(fmt.Sprint(i)), CreationTimestamp: created,
			OwnerReferences: []metav1.OwnerReference{{Kind: "Job", Name: name}}}, Spec: kueue.WorkloadSpec{QueueName: naming.LocalQueue}}
		if i >= loadJobs-loadRunning {
			at := metav1.NewTime(created.Add(time.Minute))
			wl.Status.Conditions = []metav1.Condition{
				{Type: kueue.WorkloadQuotaReserved, Status: metav1.ConditionTrue, LastTransitionTime: at},
				{Type: kueue.WorkloadAdmitted, Status: metav1.ConditionTrue, LastTransitionTime: at}}
			wl.Status.Admission = &kueue.Admission{ClusterQueue: kueue.ClusterQueueReference(ns), PodSetAssignments: []kueue.PodSetAssignment{{Name: "main",
				Flavors:       map[corev1.ResourceName]kueue.ResourceFlavorReference{"nvidia.com/gpu": loadPool},
				ResourceUsage: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}}}}
			c.running[ns] = append(c.running[ns], wl)
			c.pods[ns+"/"+name] = []*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: name + "-abcde", Namespace: ns},
				Spec: corev1.PodSpec{NodeName: fmt.Sprintf("gpu-%04d", i%loadNodes)}, Status: corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &at}}}
		} else {
			wl.Status.Conditions = []metav1.Condition{{Type: kueue.WorkloadQuotaReserved, Status: metav1.ConditionFalse,
				Message: "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor " + loadPool + ", 8 more needed"}}
		}
		c.byNS[ns] = append(c.byNS[ns], wl)
		c.owned[ns+"/Job/"+name] = []*kueue.Workload{wl}
	}
	for i := range loadLedger {
		team := loadTeams[i%len(loadTeams)]
		ended := monthStart.Add(time.Duration(i) * now.Sub(monthStart) / loadLedger)
		c.ledger = append(c.ledger, store.LedgerRow{Team: team, Namespace: naming.Namespace(team), JobName: fmt.Sprintf("ended-%05d", i%3000),
			Flavor: loadPool, Resource: "nvidia.com/gpu", GPUs: 8, Outcome: "succeeded", AdmittedAt: ended.Add(-time.Hour), EndedAt: ended,
			WaitSeconds: float64(i % 600), AllocatedGPUHours: 8, USDPerHour: 4 * money.Dollar, CostUSD: 32 * money.Dollar})
	}
	for _, team := range loadTeams {
		c.queues = append(c.queues, &kueue.ClusterQueue{ObjectMeta: metav1.ObjectMeta{Name: naming.ClusterQueue(team), Labels: map[string]string{naming.LabelTeam: team}},
			Spec: kueue.ClusterQueueSpec{CohortName: "gantry", ResourceGroups: []kueue.ResourceGroup{{CoveredResources: []corev1.ResourceName{"nvidia.com/gpu"},
				Flavors: []kueue.FlavorQuotas{{Name: loadPool, Resources: []kueue.ResourceQuota{{Name: "nvidia.com/gpu", NominalQuota: resource.MustParse("2700")}}}}}}}})
	}
	lc := &loadCluster{benchCluster: c, flavors: []*kueue.ResourceFlavor{{ObjectMeta: metav1.ObjectMeta{Name: loadPool},
		Spec: kueue.ResourceFlavorSpec{NodeLabels: map[string]string{naming.LabelPool: loadPool}}}}}
	for i := range loadNodes {
		lc.nodes = append(lc.nodes, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("gpu-%04d", i), Labels: map[string]string{naming.LabelPool: loadPool}},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8"), "cpu": resource.MustParse("96")}}})
	}
	return lc
}

// ClusterQueue finds a team's queue by name.
func (c *loadCluster) ClusterQueue(name string) (*kueue.ClusterQueue, error) {
	for _, q := range c.queues {
		if q.Name == name {
			return q, nil
		}
	}
	return nil, &kube.APIError{Kind: kube.ErrNotFound, Err: fmt.Errorf("cluster queue %s not found", name)}
}

func (c *loadCluster) ResourceFlavors() []*kueue.ResourceFlavor { return c.flavors }

// selected walks the nodes with a selector, as the node lister does.
func (c *loadCluster) selected(rf *kueue.ResourceFlavor) []*corev1.Node {
	sel := labels.SelectorFromSet(rf.Spec.NodeLabels)
	var out []*corev1.Node
	for _, n := range c.nodes {
		if sel.Matches(labels.Set(n.Labels)) {
			out = append(out, n)
		}
	}
	return out
}

func (c *loadCluster) FlavorCapacity(rf *kueue.ResourceFlavor) (corev1.ResourceList, error) {
	out := corev1.ResourceList{}
	for _, n := range c.selected(rf) {
		for name, q := range n.Status.Allocatable {
			sum := out[name]
			sum.Add(q)
			out[name] = sum
		}
	}
	return out, nil
}

func (c *loadCluster) FlavorNodes(rf *kueue.ResourceFlavor) ([]string, error) {
	var out []string
	for _, n := range c.selected(rf) {
		out = append(out, n.Name)
	}
	return out, nil
}

// BenchmarkPages serves the job list, the job page, the team page and the
// cluster page over the production-like caches to 50 users at once, each
// request a different page of the list, a different job, the team of the
// user, never from figures another request computed (the team figures'
// few-seconds cache is off; the ledger's figures are kept until the ledger
// changes, as the portal does). p50/p99 are per request.
func BenchmarkPages(b *testing.B) {
	c := newLoadCluster()
	h := &handler{Deps: Deps{Now: time.Now, Log: slog.New(slog.DiscardHandler),
		Jobs:   launch.Reader{Jobs: c.benchCluster},
		Status: &StatusDeps{Reader: queue.StatusReader{Queues: c, Workloads: c.benchCluster}, Jobs: c.benchCluster, Costs: c.benchCluster, Pools: c}},
		ledgerFigures: newLedgerFiguresCache()}
	ctx := context.Background()
	var n atomic.Int64
	pages := map[string]func() error{
		"jobs": func() error {
			i := int(n.Add(1))
			f := launch.JobFilter{Teams: loadTeams}
			switch i % 4 {
			case 1:
				f.Teams = loadTeams[i%3 : i%3+1]
			case 2:
				f.Owner = fmt.Sprintf("user-%02d", i%50)
			case 3:
				f.Kind = catalog.KindTraining
			}
			jp, err := h.Jobs.JobList(f, i%(loadJobs/jobsPerPage)+1, jobsPerPage)
			if err != nil {
				return err
			}
			p := views.JobListProps{Total: jp.Total, Page: jp.Page, Pages: jp.Pages, Jobs: jobRows(jp.Statuses)}
			return views.JobListPage(views.Nav{}, p).Render(ctx, io.Discard)
		},
		"job": func() error {
			i := int(n.Add(7919)) % loadJobs
			team := loadTeams[i%len(loadTeams)]
			rec := store.Launch{Team: team, Name: fmt.Sprintf("train-%05d", i), Namespace: naming.Namespace(team), Kind: string(catalog.KindTraining)}
			if _, err := h.Jobs.Status(rec.Team, rec.Name, catalog.KindTraining); err != nil {
				return err
			}
			q, err := h.jobQueueOf(ctx, rec, nil)
			if err != nil {
				return err
			}
			return views.JobStatusFragment(jobQueueProps(q)).Render(ctx, io.Discard)
		},
		"team": func() error {
			ts, err := h.teamStatusOf(ctx, loadTeams[int(n.Add(1))%len(loadTeams)])
			if err != nil {
				return err
			}
			return views.TeamStatusPage(views.Nav{}, teamStatusProps(ts)).Render(ctx, io.Discard)
		},
		"cluster": func() error {
			cs, err := h.clusterStatusOf(ctx)
			if err != nil {
				return err
			}
			return views.ClusterPage(views.Nav{}, clusterProps(cs)).Render(ctx, io.Discard)
		},
	}
	for _, name := range []string{"jobs", "job", "team", "cluster"} {
		b.Run("page="+name, func(b *testing.B) {
			defer runtime.KeepAlive(c)
			runUsers(b, pages[name])
		})
	}
}
