package main

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/gantry/internal/launch"
	"github.com/gantry-dev/gantry/internal/naming"
)

// TestJobActionsThroughAPI: what the job page's buttons do, a script does:
// stop and resume a notebook, scale an endpoint within its range; a
// training job cannot be stopped, and the refusal says why.
func TestJobActionsThroughAPI(t *testing.T) {
	p := startTestPortal(t, "--seed-templates", repoFile(t, "deploy/templates"))
	spec := fetchSpec(t, p.URL)
	u := p.signIn(t, "alice")
	alice := apiClient{t: t, u: p.withToken(t, "alice", apiToken(t, u, u.csrf())), spec: spec}
	start := func(template, params string) string {
		var job struct{ Name string }
		require.Equal(t, http.StatusCreated, alice.call(http.MethodPost, "/api/v1/teams/vision/jobs",
			`{"template":"`+template+`","parameters":`+params+`,"launchId":"`+launch.NewLaunchID()+`"}`, &job))
		t.Cleanup(func() { alice.u.call(http.MethodDelete, "/api/v1/teams/vision/jobs/"+job.Name, nil, "") })
		return job.Name
	}
	phase := func(name string) string {
		status, raw := alice.u.do(http.MethodGet, "/api/v1/teams/vision/jobs/"+name, nil, "")
		var job struct{ Phase string }
		if status != http.StatusOK || json.Unmarshal([]byte(raw), &job) != nil {
			return ""
		}
		return job.Phase
	}

	notebook := start("jupyter-pytorch", `{"gpus":"1"}`)
	require.Eventually(t, func() bool { return phase(notebook) != "creating" && phase(notebook) != "" }, 30*time.Second, 200*time.Millisecond)
	require.Equal(t, http.StatusAccepted, alice.call(http.MethodPost, "/api/v1/teams/vision/jobs/"+notebook+"/stop", "", nil))
	assert.Eventually(t, func() bool { return phase(notebook) == "stopped" }, 30*time.Second, 200*time.Millisecond, "the notebook stops")
	require.Equal(t, http.StatusAccepted, alice.call(http.MethodPost, "/api/v1/teams/vision/jobs/"+notebook+"/resume", "", nil))
	assert.Eventually(t, func() bool { p := phase(notebook); return p != "stopped" && p != "" }, 30*time.Second, 200*time.Millisecond, "the notebook resumes")

	training := start("pytorch-train", `{"gpus":"1","memory":"16Gi"}`)
	var e apiErr
	assert.Equal(t, http.StatusBadRequest, alice.call(http.MethodPost, "/api/v1/teams/vision/jobs/"+training+"/stop", "", &e))
	assert.Equal(t, "bad_request", e.Code)
	assert.Contains(t, e.Message, "does not apply to this kind of job")

	endpoint := start("vllm-inference", `{"gpus":"1"}`)
	e = apiErr{}
	assert.Equal(t, http.StatusUnprocessableEntity, alice.call(http.MethodPost, "/api/v1/teams/vision/jobs/"+endpoint+"/scale", `{"replicas":9}`, &e),
		"outside the template's range of replicas")
	assert.NotEmpty(t, e.Message)
	require.Equal(t, http.StatusAccepted, alice.call(http.MethodPost, "/api/v1/teams/vision/jobs/"+endpoint+"/scale", `{"replicas":2}`, nil))
	d, err := p.Env.Kube.AppsV1().Deployments(naming.Namespace("vision")).Get(context.Background(), endpoint, metav1.GetOptions{})
	require.NoError(t, err)
	require.NotNil(t, d.Spec.Replicas)
	assert.Equal(t, int32(2), *d.Spec.Replicas, "the endpoint's Deployment has 2 replicas")
}
