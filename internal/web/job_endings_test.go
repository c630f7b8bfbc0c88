package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gantry-dev/gantry/internal/audit"
	"github.com/gantry-dev/gantry/internal/devcluster"
	"github.com/gantry-dev/gantry/internal/devcluster/stacktest"
	"github.com/gantry-dev/gantry/internal/gpu"
	"github.com/gantry-dev/gantry/internal/kube"
	"github.com/gantry-dev/gantry/internal/launch"
	"github.com/gantry-dev/gantry/internal/naming"
	"github.com/gantry-dev/gantry/internal/policy"
	"github.com/gantry-dev/gantry/internal/queue"
	"github.com/gantry-dev/gantry/internal/roster"
)

const endingsPool = "h100-sxm-ib-training"

// withEvents gives the status reader the event cache, as the portal has
// it (Kueue's Admitted events date an evicted run's admission).
func withEvents(ctx context.Context, t *testing.T, env *stacktest.Env, r *queue.StatusReader) {
	events, err := kube.NewEventCache(env.Kube, 0)
	require.NoError(t, err)
	events.Start(ctx)
	require.NoError(t, events.WaitForSync(ctx))
	r.Events = events
}

// withPrometheus reads containers' memory peaks from the stack's
// Prometheus, as the portal does when Prometheus is configured.
func withPrometheus(_ context.Context, t *testing.T, env *stacktest.Env, r *queue.StatusReader) {
	m, err := gpu.New(env.PrometheusURL)
	require.NoError(t, err)
	r.Memory = m.ContainerMemoryPeak
}

// endingsTeam has one H100 GPU.
var endingsTeam = stacktest.TeamSpec{Quotas: map[string]corev1.ResourceList{
	endingsPool: {"nvidia.com/gpu": resource.MustParse("1"), "cpu": resource.MustParse("16"), "memory": resource.MustParse("64Gi")},
}}

// pageWithCause polls the job page until it shows a cause whose words start
// with prefix, and returns it with the API's status of the job.
func (p *jobPages) pageWithCause(t *testing.T, name, prefix string, within time.Duration) (*goquery.Document, apiJobStatusBody, string) {
	t.Helper()
	jobPath := "/teams/" + p.team + "/jobs/" + name
	var doc *goquery.Document
	last := ""
	deadline := time.Now().Add(within)
	for {
		var code int
		code, doc = p.page(t, jobPath)
		last = testIDText(doc, "cause-words")
		if code == http.StatusOK && strings.HasPrefix(last, prefix) {
			break
		}
		require.True(t, time.Now().Before(deadline), "the job page never said %q… within %s; last it said %q", prefix, within, last)
		time.Sleep(250 * time.Millisecond)
	}
	code, body := p.get(t, "/api/v1"+jobPath+"/status")
	require.Equal(t, http.StatusOK, code, body)
	var st apiJobStatusBody
	require.NoError(t, json.Unmarshal([]byte(body), &st))
	require.NotNil(t, st.Cause, body)
	return doc, st, body
}

// assertCause checks that the page and the API say the same cause.
func assertCause(t *testing.T, doc *goquery.Document, st apiJobStatusBody, kind queue.CauseKind, words, next string) {
	t.Helper()
	assert.Equal(t, words, testIDText(doc, "cause-words"))
	assert.Equal(t, next, testIDText(doc, "cause-next"))
	assert.Equal(t, kind, st.Cause.Kind)
	assert.Equal(t, words, st.Cause.Words)
	assert.Equal(t, next, st.Cause.Next)
}

// gibWords writes bytes as the job page writes a memory figure (15.9Gi).
func gibWords(b int64) string {
	return strings.TrimSuffix(strconv.FormatFloat(float64(b)/(1<<30), 'f', 1, 64), ".0") + "Gi"
}

// A training job launched with 16Gi whose program keeps allocating: kwok
// reports its working set climbing to the limit, then kills it out of
// memory. The page and the API name the limit and the peak Prometheus
// measured, and Relaunch doubles the memory.
func TestOutOfMemorySaysTheLimitAndThePeakPrometheusMeasured(t *testing.T) {
	p := newJobPagesFor(t, endingsTeam, withPrometheus)
	ctx := context.Background()
	require.NoError(t, p.db.UpsertTeams(ctx, []roster.Team{{Name: p.team, DisplayName: p.team, MemberGroups: p.members}}))
	_, err := launch.SeedTemplates(ctx, p.db, "../../deploy/templates")
	require.NoError(t, err)
	svc := &launch.Service{Base: p.env.RESTConfig, Store: p.records, Queues: p.queues, Rules: policy.Rules{Registries: []string{"nvcr.io"}}, Audit: audit.New(p.db, nil)}
	res, err := svc.Launch(ctx, launch.Actor{Username: "alice", Groups: p.members, Via: "test"}, launch.Request{
		Team: p.team, Template: "pytorch-train",
		Values:   map[string]string{naming.FieldGPUType: "h100", naming.FieldGPUs: "1", naming.FieldCPU: "4", naming.FieldMemory: "16Gi"},
		LaunchID: launch.NewLaunchID(),
	})
	require.NoError(t, err)

	// The program outgrows 16Gi: kwok is told to kill it out of memory
	// 18 s after it starts, and reports its working set climbing to the
	// limit before that.
	ns := "team-" + p.team
	var pod corev1.Pod
	require.Eventually(t, func() bool {
		pods, err := p.env.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: naming.LabelInstance + "=" + res.Name})
		if err != nil || len(pods.Items) != 1 {
			return false
		}
		pod = pods.Items[0]
		return true
	}, time.Minute, 100*time.Millisecond, "the job's pod is created")
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		naming.AnnotationSimulateDuration: "18s", naming.AnnotationSimulateExitCode: "137", naming.AnnotationSimulateReason: "OOMKilled",
	}}})
	require.NoError(t, err)
	_, err = p.env.Kube.CoreV1().Pods(ns).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	require.NoError(t, err)
	container := pod.Spec.Containers[0].Name
	limit := pod.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory]
	require.Equal(t, "16Gi", limit.String(), "the template limits memory to what was asked for")

	doc, st, body := p.pageWithCause(t, res.Name, "Container "+container, 90*time.Second)
	peak, ok := p.env.ContainerMemoryPeak(t, ns, pod.Name, container)
	require.True(t, ok, "Prometheus has the container's working set")
	t.Logf("peak working set in Prometheus: %d bytes (%s)", peak, gibWords(peak))
	assert.GreaterOrEqual(t, peak, limit.Value()*3/4, "the working set climbed towards the limit before the kill")
	assert.LessOrEqual(t, peak, limit.Value())
	words := fmt.Sprintf("Container %s of pod %s ran out of memory: it reached its 16Gi limit (peak %s) and was killed.", container, pod.Name, gibWords(peak))
	assert.Equal(t, words, testIDText(doc, "cause-words"))
	assert.Equal(t, "Relaunch it with more memory (32Gi), or use a smaller batch.", testIDText(doc, "cause-next"))
	assert.Equal(t, "with memory 16Gi → 32Gi", testIDText(doc, "cause-fix"))
	assert.Equal(t, "/launch/pytorch-train?memory=32Gi&relaunch="+res.Name+"&team="+p.team, doc.Find(`[data-testid="relaunch"]`).AttrOr("href", ""))

	assert.Equal(t, queue.CauseOutOfMemory, st.Cause.Kind)
	assert.Equal(t, words, st.Cause.Words, "the page and the API say the same")
	assert.Equal(t, &apiFix{Field: "memory", Value: "32Gi", Words: "memory 16Gi → 32Gi"}, st.Cause.Fix)
	assert.Contains(t, body, `"relaunchUrl":"/launch/pytorch-train?memory=32Gi\u0026relaunch=`+res.Name)
}

// A job whose image cannot be pulled never has its pods ready: Kueue's
// waitForPodsReady evicts it when its timeout passes, gives its quota back
// and requeues it after a backoff. The page and the API say so in words,
// with how long Kueue waited and what to look at.
func TestPodsNotReadyInTimeAreEvictedByKueueAndSaySo(t *testing.T) {
	p := newJobPagesFor(t, endingsTeam, withEvents)
	name := "pytorch-train-notready01"
	p.record(t, name, time.Now())
	job := stacktest.CompliantJob(p.team, name, corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1"), "cpu": resource.MustParse("1"), "memory": resource.MustParse("1Gi")})
	stacktest.OnPool(job, endingsPool)
	job.Spec.Template.Annotations = map[string]string{naming.AnnotationSimulateImagePullError: "manifest unknown"}
	job.Spec.BackoffLimit = new(int32(0))
	_, err := p.env.Kube.BatchV1().Jobs("team-"+p.team).Create(context.Background(), job, metav1.CreateOptions{})
	require.NoError(t, err)

	start := time.Now()
	doc, st, _ := p.pageWithCause(t, name, "Its pods were not all ready", devcluster.PodsReadyTimeout+time.Minute)
	t.Logf("evicted %s after the launch", time.Since(start).Round(time.Second))
	words := fmt.Sprintf("Its pods were not all ready within %d seconds, so Kueue evicted it and will requeue it after a backoff (waitForPodsReady).",
		int(devcluster.PodsReadyTimeout.Seconds()))
	next := "Look at its pods' events for what held them (an image that cannot be pulled, a pod that cannot be scheduled) and fix that; Kueue retries it by itself, waiting longer each time."
	assertCause(t, doc, st, queue.CausePodsNotReady, words, next)
	assert.True(t, st.Cause.Requeued, "Kueue requeues it")
}

// A node whose kubelet reports NotReady (its container runtime is down)
// while it runs a pod: the node lifecycle controller taints it, the pod's
// toleration of that (5 s here, 5 minutes by default) runs out and the
// taint manager evicts the pod, which stays Terminating there. The page
// and the API name the node and say it was lost.
func TestNodeNotReadyEvictsThePodAndThePageNamesTheNode(t *testing.T) {
	p := newJobPagesFor(t, endingsTeam)
	ctx := context.Background()
	ns := "team-" + p.team
	node := p.env.TestNode(t, "notready", endingsPool)
	t.Cleanup(func() {
		// No kubelet finishes the evicted pod on a dead node: remove it
		// (before the node goes), or the team's namespace never goes.
		pods, err := p.env.Kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
		if err == nil {
			for _, pod := range pods.Items {
				_ = p.env.Kube.CoreV1().Pods(ns).Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))})
			}
		}
	})

	name := "pytorch-train-nodelost01"
	p.record(t, name, time.Now())
	job := stacktest.CompliantJob(p.team, name, corev1.ResourceList{"cpu": resource.MustParse("1"), "memory": resource.MustParse("1Gi")})
	job.Spec.Template.Annotations = map[string]string{naming.AnnotationSimulateDuration: "10m"}
	job.Spec.Template.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": node}
	job.Spec.Template.Spec.Tolerations = []corev1.Toleration{
		{Key: stacktest.TestNodeTaint, Operator: corev1.TolerationOpExists},
		{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: new(int64(5))},
	}
	job.Spec.BackoffLimit = new(int32(0))
	_, err := p.env.Kube.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{})
	require.NoError(t, err)
	var pod corev1.Pod
	require.Eventually(t, func() bool {
		pods, err := p.env.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + name})
		if err != nil || len(pods.Items) != 1 {
			return false
		}
		pod = pods.Items[0]
		return pod.Status.Phase == corev1.PodRunning
	}, time.Minute, 250*time.Millisecond, "the pod runs on the node")
	require.Equal(t, node, pod.Spec.NodeName)

	// The node's container runtime goes down: its kubelet (kwok) reports
	// it NotReady, and cannot finish the pods evicted from it.
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		naming.AnnotationSimulateNodeNotReady: "container runtime is down"}}})
	require.NoError(t, err)
	_, err = p.env.Kube.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{})
	require.NoError(t, err)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		cur, err := p.env.Kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		require.NoError(c, err)
		var ready *corev1.NodeCondition
		for i := range cur.Status.Conditions {
			if cur.Status.Conditions[i].Type == corev1.NodeReady {
				ready = &cur.Status.Conditions[i]
			}
		}
		require.NotNil(c, ready, "the node has a Ready condition")
		assert.Equal(c, corev1.ConditionFalse, ready.Status)
		assert.Equal(c, "container runtime is down", ready.Message)
	}, 30*time.Second, 250*time.Millisecond, "kwok reports the node NotReady")

	start := time.Now()
	doc, st, _ := p.pageWithCause(t, name, "Node ", time.Minute)
	t.Logf("pod evicted and shown %s after the node went NotReady", time.Since(start).Round(time.Second))
	words := fmt.Sprintf("Node %s was lost (not ready or not answering), so pod %s was evicted from it.", node, pod.Name)
	next := "Nothing you did: relaunch it (or wait for its retry) and it runs on a healthy node."
	assertCause(t, doc, st, queue.CauseNodeLost, words, next)
	assert.Equal(t, node, st.Cause.Node)
	assert.Equal(t, pod.Name, st.Cause.Pod)
	// The taint manager marks the pod (DisruptionTarget, which the page
	// reads) before it deletes it; on busy cores the delete lands a moment
	// later.
	assert.EventuallyWithT(t, func(c *assert.CollectT) {
		evicted, err := p.env.Kube.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		require.NoError(c, err, "the evicted pod stays on the node, Terminating")
		assert.NotNil(c, evicted.DeletionTimestamp)
	}, 30*time.Second, 250*time.Millisecond)
}
