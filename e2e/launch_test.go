package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startLaunchPortal starts the portal with the seeded templates.
func startLaunchPortal(t *testing.T) *Portal {
	t.Helper()
	stack := stackRoot(t)
	return StartPortal(t, WithEnv("GANTRY_SEED_TEMPLATES", filepath.Join(stack, "deploy", "templates")))
}

func stackRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	return root
}

// waitForPhase watches the job page without reloading it: the status
// fragment is refreshed by the page's script.
func waitForPhase(t *testing.T, b *Browser, phase string) {
	t.Helper()
	require.Eventually(t, func() bool {
		return b.TestIDText("job-phase") == phase
	}, 2*time.Minute, 500*time.Millisecond, "job never reached %q; last seen %q at %s", phase, b.TestIDText("job-phase"), b.URL())
}

func TestResearcherLaunchesANotebookAndStopsAndResumesIt(t *testing.T) {
	portal := startLaunchPortal(t)
	b := NewBrowser(t, portal)
	b.LoginAs("alice")
	b.Open("/launch")
	b.Submit(testID("launch-jupyter-pytorch"))
	b.Submit(testID("launch-submit"))
	require.True(t, strings.HasPrefix(b.Path(), "/teams/vision/jobs/jupyter-pytorch-"), "lands on the job page, at %s", b.Path())
	name := strings.TrimPrefix(b.Path(), "/teams/vision/jobs/")
	t.Cleanup(func() {
		b.Open("/teams/vision/jobs/" + name)
		if b.HasTestID("delete") {
			b.Submit(testID("delete"))
		}
	})

	waitForPhase(t, b, "running")
	assert.Contains(t, b.TestIDText("port-forward"), "kubectl -n team-vision port-forward service/"+name+" 8888:8888")
	assert.Equal(t, "a100-mig-shared", b.Text(testID("pods")+" tbody td:nth-child(4)"))

	b.Submit(testID("stop"))
	waitForPhase(t, b, "stopped")
	require.True(t, b.HasTestID("resume"))
	b.Submit(testID("resume"))
	waitForPhase(t, b, "running")

	b.Open("/jobs")
	assert.Equal(t, "running", b.Text(`[data-testid="job-`+name+`"] [data-testid="job-phase"]`))
}

func TestResearcherLaunchesATrainingJobAndWatchesItRun(t *testing.T) {
	portal := startLaunchPortal(t)
	b := NewBrowser(t, portal)
	b.LoginAs("alice")
	b.Open("/launch/pytorch-train")
	b.Fill(testID("field-gpus"), "1")
	b.Fill(testID("field-memory"), "16Gi")
	b.Submit(testID("launch-submit"))
	require.True(t, strings.HasPrefix(b.Path(), "/teams/vision/jobs/pytorch-train-"), "lands on the job page, at %s", b.Path())
	name := strings.TrimPrefix(b.Path(), "/teams/vision/jobs/")
	t.Cleanup(func() {
		b.Open("/teams/vision/jobs/" + name)
		if b.HasTestID("delete") {
			b.Submit(testID("delete"))
		}
	})
	require.True(t, b.HasTestID("job-phase"), "the job page shows right after the launch, even before the cache has the Job")
	assert.Contains(t, b.TestIDText("parameters"), "16Gi", "with the launch's parameters")
	waitForPhase(t, b, "running")
	assert.Equal(t, "h100-sxm-ib-training", b.Text(testID("pods")+" tbody td:nth-child(4)"))
	b.Submit(testID("manifest-link"))
	assert.Equal(t, "/teams/vision/jobs/"+name+"/manifest", b.Path(), "the job page links to its rendered manifest")
	assert.Contains(t, b.TestIDText("manifest"), "name: "+name, "the manifest the launch applied")
}

func TestLaunchFormErrorKeepsTypedValues(t *testing.T) {
	portal := startLaunchPortal(t)
	b := NewBrowser(t, portal)
	b.LoginAs("alice")
	b.Open("/launch/pytorch-train")
	launchID := b.Value(testID("launch-id"))
	b.Fill(testID("field-gpus"), "16")
	b.Fill(testID("field-args"), "train.py --lr 0.3")
	b.Submit(testID("launch-submit"))

	assert.Equal(t, "This template allows the number of GPUs from 1 to 8; you asked for 16.", b.TestIDText("error-gpus"))
	assert.Equal(t, "16", b.Value(testID("field-gpus")), "the typed value is kept")
	assert.Equal(t, "train.py --lr 0.3", b.Value(testID("field-args")))
	assert.Equal(t, launchID, b.Value(testID("launch-id")), "a corrected resubmit is the same launch")
}

func TestLaunchThroughTheJSONAPI(t *testing.T) {
	portal := startLaunchPortal(t)
	b := NewBrowser(t, portal)
	b.LoginAs("carol")
	b.Open("/profile")
	b.Fill("#token-name", "launcher")
	b.Fill("#token-expires", "1")
	b.Submit(testID("create-token"))
	token := b.Value(testID("new-token"))
	require.NotEmpty(t, token)

	status, body := apiCall(t, portal, token, http.MethodGet, "/api/v1/templates", "")
	require.Equal(t, http.StatusOK, status)
	assert.Contains(t, body, `"name":"pytorch-train"`)

	status, body = apiCall(t, portal, token, http.MethodPost, "/api/v1/teams/nlp/jobs",
		`{"template":"pytorch-train","parameters":{"gpus":"9"}}`)
	require.Equal(t, http.StatusUnprocessableEntity, status, body)
	assert.Contains(t, body, `"gpus":"This template allows the number of GPUs from 1 to 8; you asked for 9."`)

	status, body = apiCall(t, portal, token, http.MethodPost, "/api/v1/teams/vision/jobs",
		`{"template":"pytorch-train","parameters":{"gpus":"1","memory":"16Gi"}}`)
	require.Equal(t, http.StatusForbidden, status, body)
	assert.Contains(t, body, "you are not a member of team vision")

	req := `{"template":"pytorch-train","parameters":{"gpus":"1","memory":"16Gi"},"launchId":"apiretry01"}`
	status, body = apiCall(t, portal, token, http.MethodPost, "/api/v1/teams/nlp/jobs", req)
	require.Equal(t, http.StatusCreated, status, body)
	var job struct{ Name, URL string }
	require.NoError(t, json.Unmarshal([]byte(body), &job))
	assert.Equal(t, "pytorch-train-apiretry01", job.Name)
	assert.Equal(t, portal.URL+"/teams/nlp/jobs/pytorch-train-apiretry01", job.URL)

	status, body = apiCall(t, portal, token, http.MethodGet, "/api/v1/teams/nlp/jobs/"+job.Name, "")
	require.Equal(t, http.StatusOK, status, "the job is there right after the launch: %s", body)
	assert.Contains(t, body, `"template":"pytorch-train"`)

	status, _ = apiCall(t, portal, token, http.MethodPost, "/api/v1/teams/nlp/jobs", req)
	assert.Equal(t, http.StatusOK, status, "a retried request returns the same job")

	require.Eventually(t, func() bool {
		status, body = apiCall(t, portal, token, http.MethodGet, "/api/v1/teams/nlp/jobs/"+job.Name, "")
		return status == http.StatusOK && strings.Contains(body, `"phase":"running"`)
	}, 2*time.Minute, 500*time.Millisecond, "never running: %s", body)

	status, _ = apiCall(t, portal, token, http.MethodDelete, "/api/v1/teams/nlp/jobs/"+job.Name, "")
	assert.Equal(t, http.StatusNoContent, status)
}

func apiCall(t *testing.T, portal *Portal, token, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, portal.URL+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}
