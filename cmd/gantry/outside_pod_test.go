package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gantry-dev/gantry/internal/devcluster/stacktest"
	"github.com/gantry-dev/gantry/internal/launch"
	"github.com/gantry-dev/gantry/internal/naming"
)

// TestBarePodMadeWithKubectlIsInTheTeamsJobs: a pod created with kubectl in
// the team's namespace, with only the queue label (Kueue's pod integration
// makes it a Workload), is in the team's jobs list, page and API, marked
// created outside Gantry, and its job page opens.
func TestBarePodMadeWithKubectlIsInTheTeamsJobs(t *testing.T) {
	p := startTestPortal(t)
	ctx := context.Background()
	ns := naming.Namespace("vision")
	name := "bare-" + strings.ToLower(launch.NewLaunchID()[:8])
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
		Labels:      map[string]string{naming.LabelQueueName: naming.LocalQueue},
		Annotations: map[string]string{"gantry.dev/simulate-duration": "10m"}},
		Spec: stacktest.RestrictedPodSpec(corev1.ResourceList{"cpu": resource.MustParse("1")})}
	_, err := p.Env.Kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = p.Env.Kube.CoreV1().Pods(ns).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	})

	alice := p.signIn(t, "alice")
	api := p.withToken(t, "alice", apiToken(t, alice, alice.csrf()))
	var page struct {
		Jobs []struct {
			Name                 string `json:"name"`
			CreatedOutsideGantry bool   `json:"createdOutsideGantry"`
		} `json:"jobs"`
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		page.Jobs = nil
		status, body := api.do(http.MethodGet, "/api/v1/teams/vision/jobs?perPage=500", nil, "")
		require.Equal(c, http.StatusOK, status, body)
		require.NoError(c, json.Unmarshal([]byte(body), &page))
		found := false
		for _, j := range page.Jobs {
			if j.Name == name {
				found = true
				assert.True(c, j.CreatedOutsideGantry, "the API marks it created outside Gantry")
			}
		}
		assert.True(c, found, "the kubectl pod is in the team's jobs (API)")
	}, time.Minute, 300*time.Millisecond)

	status, html := alice.do(http.MethodGet, "/jobs?team=vision", nil, "")
	require.Equal(t, http.StatusOK, status)
	row := rowOf(html, name)
	require.NotEmpty(t, row, "the kubectl pod is in the jobs page")
	assert.Contains(t, row, "created outside Gantry")
	status, html = alice.do(http.MethodGet, "/teams/vision/jobs/"+name, nil, "")
	require.Equal(t, http.StatusOK, status)
	assert.Contains(t, html, "created outside Gantry")
}

// rowOf is the table row of the HTML that names name, "" without one.
func rowOf(html, name string) string {
	for _, row := range strings.Split(html, "<tr") {
		if strings.Contains(row, ">"+name+"<") {
			return row
		}
	}
	return ""
}
