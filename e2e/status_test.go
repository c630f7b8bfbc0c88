package e2e

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gantry-dev/gantry/internal/devcluster/stacktest"
	"github.com/gantry-dev/gantry/internal/naming"
	"github.com/gantry-dev/gantry/internal/roster"
	"github.com/gantry-dev/gantry/internal/store"
)

const statusH100 = "h100-sxm-ib-training"

// statusTeam is a throwaway team with 8 H100 GPUs in a cohort of its own,
// whose members are vision's IdP groups (alice researcher, bob lead), and a
// portal that knows it.
func statusTeam(t *testing.T) (*stacktest.Env, string, *Portal) {
	t.Helper()
	env := stacktest.Stack(t)
	team := env.Team(t, stacktest.TeamSpec{
		Quotas: map[string]corev1.ResourceList{statusH100: {
			"nvidia.com/gpu": resource.MustParse("8"), "cpu": resource.MustParse("64"), "memory": resource.MustParse("512Gi"),
		}},
		MemberGroups: []string{"vision-researchers"},
		LeadGroups:   []string{"vision-leads"},
	})
	dsn := stacktest.Postgres(t)
	portal := StartPortal(t, WithDatabase(dsn),
		WithEnv("GANTRY_SEED_TEMPLATES", filepath.Join(stackRoot(t), "deploy", "templates")))
	ctx := context.Background()
	db, err := store.Open(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	require.NoError(t, store.Migrate(ctx, db.SQL(), slog.New(slog.DiscardHandler)))
	require.NoError(t, db.UpsertTeams(ctx, []roster.Team{{Name: team.Name, DisplayName: "Status test team",
		MemberGroups: store.StringList{"vision-researchers"}, LeadGroups: store.StringList{"vision-leads"}}}))
	return env, team.Name, portal
}

// blockQuota runs a job holding all 8 GPUs of the team until it is deleted.
func blockQuota(t *testing.T, env *stacktest.Env, team string) func() {
	t.Helper()
	job := stacktest.CompliantJob(team, "blocker", corev1.ResourceList{
		"nvidia.com/gpu": resource.MustParse("8"), "cpu": resource.MustParse("8"), "memory": resource.MustParse("32Gi"),
	})
	job.Spec.Template.Spec.NodeSelector = map[string]string{naming.LabelPool: statusH100}
	job.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	job.Spec.Template.Annotations = map[string]string{"gantry.dev/simulate-duration": "30m"}
	// Highest priority, so the training job launched next cannot preempt it.
	job.Labels[naming.LabelPriorityClass] = "inference"
	job.Spec.Template.Labels[naming.LabelPriorityClass] = "inference"
	ns := "team-" + team
	_, err := env.Kube.BatchV1().Jobs(ns).Create(context.Background(), job, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		pods, err := env.Kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "job-name=blocker"})
		return err == nil && len(pods.Items) == 1 && pods.Items[0].Status.Phase == corev1.PodRunning
	}, time.Minute, 250*time.Millisecond, "blocker runs")
	return func() {
		_ = env.Kube.BatchV1().Jobs(ns).Delete(context.Background(), "blocker",
			metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
	}
}

func TestResearcherSeesWhyTheJobWaitsThenSeesItAdmitted(t *testing.T) {
	env, team, portal := statusTeam(t)
	unblock := blockQuota(t, env, team)
	t.Cleanup(unblock)

	b := NewBrowser(t, portal)
	b.LoginAs("alice")
	b.Open("/launch/pytorch-train")
	b.do("choose team", chromedp.SetValue(testID("field-team"), team))
	b.do("choose H100", chromedp.SetValue(testID("field-"+naming.FieldGPUType), "h100"))
	b.Fill(testID("field-gpus"), "4")
	b.Fill(testID("field-memory"), "16Gi")
	b.Submit(testID("launch-submit"))
	require.True(t, strings.HasPrefix(b.Path(), "/teams/"+team+"/jobs/pytorch-train-"), "lands on the job page, at %s", b.Path())

	// The page shows at once, even before the portal's cache has seen the
	// new Job, and its status component refreshes itself: no reloads.
	require.True(t, b.HasTestID("job-status"), "the job page shows right after the launch")
	require.Eventually(t, func() bool {
		return b.HasTestID("pending-position")
	}, time.Minute, 500*time.Millisecond, "position shown; at %s", b.URL())
	assert.Equal(t, "queued", b.TestIDText("job-phase"))
	reason := b.TestIDText("pending-reason")
	assert.Contains(t, reason, "waiting for 4 H100 GPUs: your team uses 8 of 8, the cohort has none to lend")
	assert.Contains(t, reason, "; next in line")
	assert.Contains(t, b.TestIDText("pending-position"), "Position 1 in your team's queue, 1 in the ClusterQueue")
	assert.Contains(t, b.TestIDText("pending-raw"), statusH100, "Kueue's own words beside ours")

	unblock()
	require.Eventually(t, func() bool {
		phase := b.TestIDText("job-phase")
		return phase == "admitted" || phase == "creating" || phase == "running"
	}, 2*time.Minute, 500*time.Millisecond, "admitted; last seen %q", b.TestIDText("job-phase"))
	assert.False(t, b.HasTestID("pending"))
	assert.Contains(t, b.TestIDText("allocation"), "4 H100 GPUs in pool "+statusH100+" (whole GPUs)")
	assert.Contains(t, b.TestIDText("timeline"), "admitted")
	assert.Empty(t, b.ConsoleErrors())
}

func TestLeadSeesTheTeamPageWithCharts(t *testing.T) {
	env, team, portal := statusTeam(t)
	t.Cleanup(blockQuota(t, env, team))

	b := NewBrowser(t, portal)
	b.LoginAs("bob")
	b.Open("/teams/" + team)
	assert.Equal(t, "Team "+team, b.TestIDText("team-title"))
	assert.Equal(t, "8", b.Text(`[data-testid="quota-team-`+team+`-`+statusH100+`-nvidia.com/gpu"] [data-testid="used"]`))
	assert.Contains(t, b.TestIDText("team-counts"), "0 pending, 1 admitted")
	for _, chart := range []string{"hours-chart", "spend-chart"} {
		require.True(t, b.exists(testID(chart)+" svg"), "%s is drawn as SVG", chart)
	}
	assert.True(t, b.HasTestID("ledger-csv"))
	assert.Contains(t, b.TestIDText("running-now"), "GPU-hours so far")

	// The same figures as JSON, for scripts.
	b.Open("/profile")
	b.Fill("#token-name", "status")
	b.Fill("#token-expires", "1")
	b.Submit(testID("create-token"))
	token := b.Value(testID("new-token"))
	status, body := apiCall(t, portal, token, http.MethodGet, "/api/v1/teams/"+team+"/status", "")
	require.Equal(t, http.StatusOK, status, body)
	var got struct {
		Queue struct {
			Admitted int
			Flavors  []struct {
				Flavor, Resource string
				Nominal, Used    int64
			}
		} `json:"queue"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &got))
	assert.Equal(t, 1, got.Queue.Admitted)
	require.NotEmpty(t, got.Queue.Flavors)
	// camelCase field names throughout, as in every /api/v1 answer.
	assert.Contains(t, body, `"admitted":1`)
	assert.Contains(t, body, `"clusterQueue":"team-`+team+`"`)
	assert.Contains(t, body, `"allocatedGpuHours":`)
	assert.NotContains(t, body, `"AllocatedGPUHours"`)
	status, body = apiCall(t, portal, token, http.MethodGet, "/api/v1/teams/"+team+"/ledger", "")
	require.Equal(t, http.StatusOK, status, body)
	assert.Contains(t, body, `"runs":`)
	status, _ = apiCall(t, portal, token, http.MethodGet, "/api/v1/teams/nlp/status", "")
	assert.Equal(t, http.StatusNotFound, status, "another team's figures are hidden")
}

func TestAdminSeesTheClusterPage(t *testing.T) {
	portal := StartPortal(t)
	b := NewBrowser(t, portal)
	b.LoginAs("erin")
	b.Open("/admin/cluster")
	assert.Equal(t, "16", b.Text(`[data-testid="pool-`+statusH100+`-nvidia.com/gpu"] [data-testid="capacity"]`), "2 nodes × 8 H100")
	assert.True(t, b.HasTestID("queue-team-vision"))
	assert.True(t, b.HasTestID("team-spend"))

	alice := NewBrowser(t, portal)
	alice.LoginAs("alice")
	alice.Open("/admin/cluster")
	assert.Contains(t, alice.Text("h1"), "Admins only")
}
