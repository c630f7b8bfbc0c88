package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gantry-dev/gantry/internal/launch"
	"github.com/gantry-dev/gantry/internal/naming"
)

// idleTemplate is the notebook template with a workspace claim: a
// StorageClass of its own, bound in the test to a PersistentVolume made
// for each notebook (the local cluster has no provisioner).
const idleStorageClass = "gantry-idle-test"

func idleTemplatesDir(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(repoFile(t, "deploy/templates/jupyter-pytorch.yaml"))
	require.NoError(t, err)
	y := strings.Replace(string(raw), "name: jupyter-pytorch", "name: jupyter-idle", 1)
	y = strings.Replace(y, "workspace: {size: 20Gi, mountPath: /home/jovyan/work}",
		"workspace: {size: 20Gi, mountPath: /home/jovyan/work, storageClass: "+idleStorageClass+"}", 1)
	require.Contains(t, y, "storageClass: "+idleStorageClass)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "jupyter-idle.yaml"), []byte(y), 0o644))
	return dir
}

// workspaceVolume binds a PersistentVolume to the claim the notebook's
// StatefulSet makes for its pod 0.
func workspaceVolume(t *testing.T, p *testPortal, namespace, notebook string) string {
	t.Helper()
	claim := "workspace-" + notebook + "-0"
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: namespace + "-" + claim},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("20Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName:              idleStorageClass,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			ClaimRef:                      &corev1.ObjectReference{Namespace: namespace, Name: claim},
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/" + claim}},
		},
	}
	_, err := p.Env.Kube.CoreV1().PersistentVolumes().Create(context.Background(), pv, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = p.Env.Kube.CoreV1().PersistentVolumes().Delete(context.Background(), pv.Name, metav1.DeleteOptions{})
	})
	return claim
}

type idleState struct {
	Warning *struct {
		StopAt time.Time `json:"stopAt"`
	} `json:"warning"`
	Reclaimed *struct {
		Action    string `json:"action"`
		Reason    string `json:"reason"`
		GPUsFreed int64  `json:"gpusFreed"`
	} `json:"reclaimed"`
	Hold *struct {
		Exempt bool   `json:"exempt"`
		Reason string `json:"reason"`
		By     string `json:"by"`
	} `json:"hold"`
}

// TestIdleNotebookIsWarnedThenStoppedWithItsWorkspace drives two
// notebooks' GPUs to 0 % with sim.gantry.dev/gpu-util: the one a lead
// exempted keeps running; the other is warned (notification, banner with
// "keep it running"), then stopped with the reason on its page and in the
// audit log, its workspace claim kept.
func TestIdleNotebookIsWarnedThenStoppedWithItsWorkspace(t *testing.T) {
	p := startTestPortal(t, "--seed-templates", idleTemplatesDir(t),
		// Short windows for the test; the bounds stay, only configured lower.
		"--idle-min-window", "20s", "--idle-window", "30s", "--idle-grace", "20s", "--idle-reclaim-interval", "2s",
		"--idle-now-window", "30s")
	spec := fetchSpec(t, p.URL)
	aliceBrowser := p.signIn(t, "alice")
	alice := apiClient{t: t, u: p.withToken(t, "alice", apiToken(t, aliceBrowser, aliceBrowser.csrf())), spec: spec}
	bobBrowser := p.signIn(t, "bob")
	bob := apiClient{t: t, u: p.withToken(t, "bob", apiToken(t, bobBrowser, bobBrowser.csrf())), spec: spec}
	erinBrowser := p.signIn(t, "erin")
	erin := apiClient{t: t, u: p.withToken(t, "erin", apiToken(t, erinBrowser, erinBrowser.csrf())), spec: spec}
	ns := naming.Namespace("vision")
	ctx := context.Background()

	launchNotebook := func() (string, string) {
		var job struct{ Name string }
		require.Equal(t, http.StatusCreated, alice.call(http.MethodPost, "/api/v1/teams/vision/jobs",
			`{"template":"jupyter-idle","parameters":{"gpuType":"mig-1g.10gb"},"launchId":"`+launch.NewLaunchID()+`"}`, &job))
		t.Cleanup(func() { alice.u.call(http.MethodDelete, "/api/v1/teams/vision/jobs/"+job.Name, nil, "") })
		// The claim waits for this volume; the pod waits for the claim.
		return job.Name, workspaceVolume(t, p, ns, job.Name)
	}
	idle, idleClaim := launchNotebook()
	kept, _ := launchNotebook()

	// Both run, then their GPUs go quiet.
	for _, nb := range []string{idle, kept} {
		require.Eventually(t, func() bool {
			pod, err := p.Env.Kube.CoreV1().Pods(ns).Get(ctx, nb+"-0", metav1.GetOptions{})
			return err == nil && pod.Status.Phase == corev1.PodRunning
		}, 90*time.Second, 500*time.Millisecond, "notebook %s runs", nb)
		patch := `{"metadata":{"annotations":{"` + naming.AnnotationSimGPUUtil + `":"0"}}}`
		_, err := p.Env.Kube.CoreV1().Pods(ns).Patch(ctx, nb+"-0", types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		require.NoError(t, err)
	}
	// The lead exempts one, with a reason; a researcher may not.
	var e apiErr
	assert.Equal(t, http.StatusForbidden, alice.call(http.MethodPost, "/api/v1/teams/vision/jobs/"+kept+"/idle/exempt", `{"reason":"mine"}`, &e))
	var st idleState
	require.Equal(t, http.StatusOK, bob.call(http.MethodPost, "/api/v1/teams/vision/jobs/"+kept+"/idle/exempt",
		`{"reason":"long evaluation reads the GPU only at the end"}`, &st))
	require.NotNil(t, st.Hold)
	assert.Equal(t, "long evaluation reads the GPU only at the end", st.Hold.Reason)

	// The warning: on the job page with "keep it running", and in alice's notifications.
	require.Eventually(t, func() bool {
		var s idleState
		return alice.call(http.MethodGet, "/api/v1/teams/vision/jobs/"+idle+"/idle", "", &s) == http.StatusOK && s.Warning != nil
	}, 2*time.Minute, time.Second, "notebook %s is warned", idle)
	status, page := aliceBrowser.do(http.MethodGet, "/teams/vision/jobs/"+idle, nil, "")
	require.Equal(t, http.StatusOK, status)
	assert.Contains(t, page, `data-testid="idle-warning"`)
	assert.Contains(t, page, "It will be stopped at")
	assert.Contains(t, page, "Keep it running for")
	status, notes := alice.u.do(http.MethodGet, "/api/v1/notifications", nil, "")
	require.Equal(t, http.StatusOK, status)
	assert.Contains(t, notes, "Notebook "+idle+" in vision will be stopped at")

	// Then the stop, with the reason, and the claim kept.
	require.Eventually(t, func() bool {
		var s idleState
		return alice.call(http.MethodGet, "/api/v1/teams/vision/jobs/"+idle+"/idle", "", &s) == http.StatusOK &&
			s.Reclaimed != nil && s.Reclaimed.Action == "stopped"
	}, 2*time.Minute, time.Second, "notebook %s is stopped", idle)
	require.Eventually(t, func() bool {
		status, raw := alice.u.do(http.MethodGet, "/api/v1/teams/vision/jobs/"+idle, nil, "")
		return status == http.StatusOK && strings.Contains(raw, `"phase":"stopped"`)
	}, time.Minute, time.Second, "notebook %s shows stopped", idle)
	status, page = aliceBrowser.do(http.MethodGet, "/teams/vision/jobs/"+idle, nil, "")
	require.Equal(t, http.StatusOK, status)
	assert.Contains(t, page, `data-testid="idle-reclaimed"`)
	assert.Contains(t, page, "Stopped by idle reclaim at")
	assert.Contains(t, page, "its GPUs have been under 5% utilization for 30 seconds")
	assert.Contains(t, page, "Freed 1 GPU")
	assert.Contains(t, page, "Its workspace is kept.")
	_, err := p.Env.Kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, idleClaim, metav1.GetOptions{})
	assert.NoError(t, err, "the workspace claim %s is kept", idleClaim)

	// The audit log has one stop, by the reclaim, with what it freed.
	var audit struct {
		Entries []struct {
			Actor  string          `json:"actor"`
			Action string          `json:"action"`
			Target string          `json:"target"`
			Detail json.RawMessage `json:"detail"`
		} `json:"entries"`
	}
	require.Equal(t, http.StatusOK, erin.call(http.MethodGet, "/api/v1/audit?action=idle.stop", "", &audit))
	var stops []string
	for _, a := range audit.Entries {
		if a.Action == "idle.stop" && (a.Target == ns+"/"+idle || a.Target == ns+"/"+kept) {
			stops = append(stops, a.Target)
			assert.Equal(t, "idle-reclaim", a.Actor)
			var d map[string]any
			require.NoError(t, json.Unmarshal(a.Detail, &d))
			assert.Equal(t, 1.0, d["gpusFreed"], "one MIG slice freed")
			assert.Equal(t, "nvidia.com/mig-1g.10gb", d["resource"])
			assert.Equal(t, true, d["workspaceKept"])
			assert.Positive(t, d["idleGpuHours"])
		}
	}
	assert.Equal(t, []string{ns + "/" + idle}, stops, "one stop, of the idle notebook only")

	// The exempted notebook still runs.
	sts, err := p.Env.Kube.AppsV1().StatefulSets(ns).Get(ctx, kept, metav1.GetOptions{})
	require.NoError(t, err)
	require.NotNil(t, sts.Spec.Replicas)
	assert.Equal(t, int32(1), *sts.Spec.Replicas, "the exempted notebook keeps its replica")
	status, page = bobBrowser.do(http.MethodGet, "/teams/vision/jobs/"+kept, nil, "")
	require.Equal(t, http.StatusOK, status)
	assert.Contains(t, page, "Exempt from idle reclaim by bob: long evaluation reads the GPU only at the end")

	// Its status says idle now once its last 30 seconds (--idle-now-window) of samples are all under the threshold.
	require.Eventually(t, func() bool {
		var s struct {
			GPU *struct {
				Idle bool `json:"idle"`
			} `json:"gpu"`
		}
		return alice.call(http.MethodGet, "/api/v1/teams/vision/jobs/"+kept+"/status", "", &s) == http.StatusOK && s.GPU != nil && s.GPU.Idle
	}, 3*time.Minute, 2*time.Second, "the exempted notebook is idle now")
	status, page = aliceBrowser.do(http.MethodGet, "/teams/vision/jobs/"+kept, nil, "")
	require.Equal(t, http.StatusOK, status)
	assert.Contains(t, page, `data-testid="idle-badge">idle now</span>`)
}
