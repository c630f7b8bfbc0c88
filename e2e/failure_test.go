package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gantry-dev/gantry/internal/naming"
)

// A researcher opens a job that ran out of memory, reads why in one
// sentence, clicks Relaunch and gets the form filled from the failed run
// with twice the memory.
func TestResearcherReadsWhyAJobFailedAndRelaunchesWithTheFix(t *testing.T) {
	env, team, portal := statusTeam(t)
	b := NewBrowser(t, portal)
	b.LoginAs("alice")
	b.Open("/launch/pytorch-train")
	b.do("choose team", chromedp.SetValue(testID("field-team"), team))
	b.do("choose H100", chromedp.SetValue(testID("field-"+naming.FieldGPUType), "h100"))
	b.Fill(testID("field-gpus"), "1")
	b.Fill(testID("field-memory"), "16Gi")
	b.Submit(testID("launch-submit"))
	jobPath := b.Path()
	require.True(t, strings.HasPrefix(jobPath, "/teams/"+team+"/jobs/pytorch-train-"), "lands on the job page, at %s", jobPath)
	name := strings.TrimPrefix(jobPath, "/teams/"+team+"/jobs/")
	waitForPhase(t, b, "running")

	// The training process outgrows its memory: the kernel kills it, as
	// kwok does to the running pod when told so, 15 s on, its working set
	// at the limit until then.
	ns := "team-" + team
	pods, err := env.Kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: naming.LabelInstance + "=" + name})
	require.NoError(t, err)
	require.Len(t, pods.Items, 1)
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		"gantry.dev/simulate-duration": "15s", "gantry.dev/simulate-exit-code": "137", "gantry.dev/simulate-reason": "OOMKilled",
	}}})
	require.NoError(t, err)
	_, err = env.Kube.CoreV1().Pods(ns).Patch(context.Background(), pods.Items[0].Name, types.MergePatchType, patch, metav1.PatchOptions{})
	require.NoError(t, err)

	// The page, refreshing itself, says why in one sentence and what to
	// do, with the peak Prometheus measured.
	waitForPhase(t, b, "failed")
	container := pods.Items[0].Spec.Containers[0].Name
	peak, ok := env.ContainerMemoryPeak(t, ns, pods.Items[0].Name, container)
	require.True(t, ok, "Prometheus has the container's working set")
	assert.Equal(t, int64(16<<30), peak, "at its limit when killed")
	assert.Equal(t, "Container "+container+" of pod "+pods.Items[0].Name+" ran out of memory: it reached its 16Gi limit (peak 16Gi) and was killed.",
		b.TestIDText("cause-words"))
	assert.Equal(t, "Relaunch it with more memory (32Gi), or use a smaller batch.", b.TestIDText("cause-next"))
	assert.Equal(t, "with memory 16Gi → 32Gi", b.TestIDText("cause-fix"))

	b.Submit(testID("relaunch"))
	assert.True(t, strings.HasPrefix(b.Path(), "/launch/pytorch-train?"), "on the launch form, at %s", b.Path())
	assert.Equal(t, "32Gi", b.Value(testID("field-memory")), "the fix is applied")
	assert.Equal(t, "1", b.Value(testID("field-gpus")), "the rest as the failed run had it")
	assert.Equal(t, "h100", b.Value(testID("field-"+naming.FieldGPUType)))
	assert.Equal(t, team, b.Value(testID("field-team")))
	assert.Contains(t, b.TestIDText("relaunch-notice"), "Pre-filled from "+name+".")
	assert.Equal(t, "memory 16Gi → 32Gi", b.TestIDText("relaunch-changes"))

	// Launching it runs the fixed job.
	b.Submit(testID("launch-submit"))
	require.True(t, strings.HasPrefix(b.Path(), "/teams/"+team+"/jobs/pytorch-train-"), "lands on the new job's page, at %s", b.Path())
	require.NotEqual(t, jobPath, b.Path())
	assert.Contains(t, b.TestIDText("parameters"), "32Gi")
	waitForPhase(t, b, "running")
	assert.Empty(t, b.ConsoleErrors())
}
