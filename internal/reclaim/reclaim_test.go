package reclaim_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/gantry-dev/gantry/internal/audit"
	"github.com/gantry-dev/gantry/internal/catalog"
	"github.com/gantry-dev/gantry/internal/devcluster/stacktest"
	"github.com/gantry-dev/gantry/internal/gpu"
	"github.com/gantry-dev/gantry/internal/money"
	"github.com/gantry-dev/gantry/internal/naming"
	"github.com/gantry-dev/gantry/internal/reclaim"
	"github.com/gantry-dev/gantry/internal/roster"
	"github.com/gantry-dev/gantry/internal/store"
)

const (
	mig    = "nvidia.com/mig-1g.10gb"
	flavor = "a100-mig-shared"
)

// cluster stands in for the job cache and the scaler: a job's pods run
// while its replicas are above 0.
type cluster struct {
	mu       sync.Mutex
	started  time.Time
	replicas map[string]int32
	scales   map[string]int
	episode  map[string]int64 // the idle episode last applied to each job, as KubeScaler marks it
}

func (c *cluster) Pods(namespace, name string) ([]*corev1.Pod, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*corev1.Pod
	for i := range c.replicas[name] {
		out = append(out, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name + "-" + string(rune('a'+i)), Namespace: namespace},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &metav1.Time{Time: c.started}}})
	}
	return out, nil
}

func (c *cluster) WorkloadsOwnedBy(namespace, kind, name string) ([]*kueue.Workload, error) {
	return []*kueue.Workload{{Status: kueue.WorkloadStatus{Admission: &kueue.Admission{PodSetAssignments: []kueue.PodSetAssignment{{
		Flavors:       map[corev1.ResourceName]kueue.ResourceFlavorReference{mig: flavor},
		ResourceUsage: corev1.ResourceList{mig: resource.MustParse("1")},
	}}}}}}, nil
}

func (c *cluster) StatefulSet(namespace, name string) (*appsv1.StatefulSet, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return &appsv1.StatefulSet{ObjectMeta: c.meta(name)}, nil
}

func (c *cluster) Deployment(namespace, name string) (*appsv1.Deployment, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.replicas[name]
	return &appsv1.Deployment{ObjectMeta: c.meta(name), Spec: appsv1.DeploymentSpec{Replicas: &r}}, nil
}

func (c *cluster) meta(name string) metav1.ObjectMeta {
	if id, ok := c.episode[name]; ok {
		return metav1.ObjectMeta{Annotations: map[string]string{naming.AnnotationIdleEpisode: strconv.FormatInt(id, 10)}}
	}
	return metav1.ObjectMeta{}
}

func (c *cluster) scale(name string, replicas int32, episode int64) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if id, ok := c.episode[name]; ok && id == episode {
		return false, nil
	}
	if c.episode == nil {
		c.episode = map[string]int64{}
	}
	c.episode[name] = episode
	c.replicas[name] = replicas
	c.scales[name]++
	return true, nil
}

func (c *cluster) ScaleStatefulSet(_ context.Context, _, name string, replicas int32, episode int64) (bool, error) {
	return c.scale(name, replicas, episode)
}

func (c *cluster) ScaleDeployment(_ context.Context, _, name string, replicas int32, episode int64) (bool, error) {
	return c.scale(name, replicas, episode)
}

// quiet GPUs: every job at 1 %.
type quiet struct{}

func (quiet) IdlePeak(context.Context, gpu.Job, time.Duration, time.Time) (float64, bool, error) {
	return 1, true, nil
}

func (quiet) IdlePeaks(context.Context, time.Duration, time.Time) (gpu.PeakOf, error) {
	return func(gpu.Job) (float64, bool) { return 1, true }, nil
}

type templates struct{}

func (templates) Template(context.Context, string, int) (catalog.Template, error) {
	return catalog.Template{Parameters: catalog.Parameters{Replicas: &catalog.IntRange{Min: 1, Max: 4, Default: 1}}}, nil
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.t = c.t.Add(d) }
func auditOf(t *testing.T, db *store.Store, action string) []store.AuditEntry {
	t.Helper()
	es, err := db.AuditEntries(context.Background(), store.AuditFilter{Action: action, Limit: 100})
	require.NoError(t, err)
	return es
}

// TestReclaimActsOnceAcrossLeaders: two replicas scan at once, as after a
// leader change, on a fake clock. The idle notebook is warned once, then
// stopped once with one audit entry saying what it freed; the exempted
// one is left alone; the endpoint goes to its minimum once; training is
// flagged, never scaled.
func TestReclaimActsOnceAcrossLeaders(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, stacktest.Postgres(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	require.NoError(t, store.Migrate(ctx, db.SQL(), slog.New(slog.DiscardHandler)))

	t0 := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	clk := &clock{t: t0}
	require.NoError(t, db.AddPrice(ctx, store.GPUPrice{Flavor: flavor, Resource: mig, EffectiveFrom: t0.Add(-24 * time.Hour), USDPerHour: 2 * money.Dollar}))
	c := &cluster{started: t0.Add(-2 * time.Hour), replicas: map[string]int32{}, scales: map[string]int{}}
	for _, j := range []struct{ name, kind string }{{"nb-idle", "notebook"}, {"nb-exempt", "notebook"}, {"endpoint", "inference"}, {"train", "training"}} {
		_, err := db.RecordLaunch(ctx, store.Launch{LaunchID: "id-" + j.name, Team: "vision", Namespace: "team-vision", Name: j.name, Kind: j.kind,
			Template: "t", TemplateVersion: 1, Owner: "alice", Parameters: json.RawMessage(`{}`), Objects: store.StringList{}})
		require.NoError(t, err)
		c.replicas[j.name] = 1
	}
	c.replicas["endpoint"] = 3

	log := audit.New(db, clk.Now)
	replica := func() *reclaim.Reclaimer {
		return &reclaim.Reclaimer{Settings: reclaim.DefaultSettings(), Store: db, Teams: db, Metrics: quiet{}, Jobs: c, Scaler: c,
			Templates: templates{}, Audit: log, Now: clk.Now, Log: slog.New(slog.DiscardHandler)}
	}
	a, b := replica(), replica()
	both := func() {
		var wg sync.WaitGroup
		for _, r := range []*reclaim.Reclaimer{a, b} {
			wg.Go(func() { assert.NoError(t, r.Scan(ctx)) })
		}
		wg.Wait()
	}
	exempt, err := db.LaunchByName(ctx, "team-vision", "nb-exempt")
	require.NoError(t, err)
	require.NoError(t, a.Exempt(ctx, reclaim.Actor{Username: "bob"}, exempt, "benchmark waits for a dataset"))

	both()
	assert.Len(t, auditOf(t, db, reclaim.ActionWarn), 1, "one warning, for the idle notebook")
	assert.Len(t, auditOf(t, db, reclaim.ActionFlag), 1, "training flagged once")
	assert.Len(t, auditOf(t, db, reclaim.ActionScale), 1, "the endpoint scaled once")
	assert.Equal(t, int32(1), c.replicas["endpoint"], "the endpoint is at its minimum")
	notes, err := db.Notifications(ctx, "alice", 10)
	require.NoError(t, err)
	var warned int
	for _, n := range notes {
		if n.Link == "/teams/vision/jobs/nb-idle" {
			warned++
			assert.Contains(t, n.Text, "Notebook nb-idle in vision will be stopped at 12:15 UTC")
		}
	}
	assert.Equal(t, 1, warned, "alice is told once")

	// Within the grace nothing more happens; after it, one stop.
	clk.Add(10 * time.Minute)
	both()
	assert.Empty(t, auditOf(t, db, reclaim.ActionStop))
	clk.Add(6 * time.Minute)
	both()
	stops := auditOf(t, db, reclaim.ActionStop)
	require.Len(t, stops, 1, "one stop across both replicas")
	assert.Equal(t, "team-vision/nb-idle", stops[0].Target)
	assert.Equal(t, reclaim.SystemActor, stops[0].Actor)
	var d map[string]any
	require.NoError(t, json.Unmarshal(stops[0].Detail, &d))
	// Idle from 11:00 (the window before the warning) to 12:16: 76 minutes of one slice at $2/h.
	assert.Equal(t, "2.533333", d["idleCostUsd"])
	assert.InDelta(t, 76.0/60, d["idleGpuHours"], 1e-9)
	assert.Equal(t, "2.000000", d["usdPerHourFreed"])
	assert.Equal(t, int32(0), c.replicas["nb-idle"], "the idle notebook is stopped")
	assert.Equal(t, int32(1), c.replicas["nb-exempt"], "the exempted notebook runs")
	assert.Equal(t, int32(1), c.replicas["train"], "training is never stopped")
	assert.Zero(t, c.scales["train"])
	assert.Zero(t, c.scales["nb-exempt"])

	// A later leader finds nothing left to do.
	clk.Add(time.Hour)
	both()
	assert.Len(t, auditOf(t, db, reclaim.ActionStop), 1)
	assert.Len(t, auditOf(t, db, reclaim.ActionWarn), 1)
	assert.Len(t, auditOf(t, db, reclaim.ActionScale), 1)
	assert.Len(t, auditOf(t, db, reclaim.ActionFlag), 1)

	// The page's state: the stop with its reason.
	idle, err := db.LaunchByName(ctx, "team-vision", "nb-idle")
	require.NoError(t, err)
	st, err := a.StateOf(ctx, idle, true)
	require.NoError(t, err)
	require.NotNil(t, st.Stopped)
	assert.Equal(t, "Stopped by idle reclaim at 2026-03-02 12:16 UTC: its GPUs have been under 5% utilization for 60 minutes. "+
		"Freed 1 GPU (1.27 idle GPU-hours, $2.53; $2.00 an hour from then). Its workspace is kept.", reclaim.Reason(*st.Stopped))
}

// TestPolicyBounds: an admin's window outside the configured bounds is
// refused in words; inside, it applies to that team only.
func TestPolicyBounds(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, stacktest.Postgres(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	require.NoError(t, store.Migrate(ctx, db.SQL(), slog.New(slog.DiscardHandler)))
	require.NoError(t, db.UpsertTeams(ctx, []roster.Team{{Name: "vision", DisplayName: "Vision"}}))
	r := &reclaim.Reclaimer{Settings: reclaim.DefaultSettings(), Store: db, Teams: db, Audit: audit.New(db, nil), Log: slog.New(slog.DiscardHandler)}
	admin := reclaim.Actor{Username: "erin"}
	_, err = r.SetPolicy(ctx, admin, reclaim.Policy{Team: "vision", Kind: catalog.KindNotebook, Threshold: 5, Window: time.Minute, Grace: time.Minute, Extension: time.Hour})
	var pe *reclaim.PolicyError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, []string{"The window must be between 10 minutes and 24 hours."}, pe.Problems)

	_, err = r.SetPolicy(ctx, admin, reclaim.Policy{Team: "vision", Kind: catalog.KindNotebook, Threshold: 10, Window: 30 * time.Minute, Grace: 5 * time.Minute, Extension: time.Hour})
	require.NoError(t, err)
	p, err := r.PolicyFor(ctx, "vision", catalog.KindNotebook)
	require.NoError(t, err)
	assert.Equal(t, 30*time.Minute, p.Window)
	assert.Equal(t, 10.0, p.Threshold)
	other, err := r.PolicyFor(ctx, "nlp", catalog.KindNotebook)
	require.NoError(t, err)
	assert.Equal(t, time.Hour, other.Window, "other teams keep the default")
	assert.Len(t, auditOf(t, db, reclaim.ActionPolicy), 1)
}
