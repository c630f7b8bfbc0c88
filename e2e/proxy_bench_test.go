package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/gantry/internal/devcluster/stacktest"
	"github.com/gantry-dev/gantry/internal/launch"
)

// proxyBenchCalls is how many calls each way the proxy benchmark times.
const proxyBenchCalls = 1000

// BenchmarkProxy is the endpoint proxy's added latency: GET /v1/models of
// a running endpoint through /endpoints/{team}/{name}/ with a key, against
// the same call straight to the stand-in at the pod's IP, interleaved, one
// at a time over kept-alive connections (`make bench`: BENCH Proxy
// p50_ms=… p99_ms=… direct_p50_ms=… direct_p99_ms=…).
func BenchmarkProxy(b *testing.B) {
	env := stacktest.Stack(b)
	root, err := filepath.Abs("..")
	require.NoError(b, err)
	portal := StartPortal(b, WithEnv("GANTRY_SEED_TEMPLATES", filepath.Join(root, "deploy", "templates")), WithEnv("GANTRY_LOG_LEVEL", "warn"))
	alice := formSignIn(b, portal, "alice")
	csrf := profileCSRF(b, alice, portal)
	call := func(method, path, body string) (int, string) {
		req, err := http.NewRequest(method, portal.URL+path, strings.NewReader(body))
		require.NoError(b, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-CSRF-Token", csrf)
		resp, err := alice.Do(req)
		require.NoError(b, err)
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(out)
	}
	status, body := call(http.MethodPost, "/api/v1/teams/vision/jobs",
		`{"template":"vllm-inference","parameters":{"gpus":"1","memory":"16Gi"},"launchId":"`+launch.NewLaunchID()+`"}`)
	require.Equal(b, http.StatusCreated, status, body)
	var job struct{ Name string }
	require.NoError(b, json.Unmarshal([]byte(body), &job))
	b.Cleanup(func() { call(http.MethodDelete, "/api/v1/teams/vision/jobs/"+job.Name, "") })
	status, body = call(http.MethodPost, "/api/v1/teams/vision/jobs/"+job.Name+"/keys", `{"label":"bench"}`)
	require.Equal(b, http.StatusCreated, status, body)
	var key struct{ Secret string }
	require.NoError(b, json.Unmarshal([]byte(body), &key))

	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	timed := func(url, bearer string) time.Duration {
		req, err := http.NewRequest(http.MethodGet, url, nil)
		require.NoError(b, err)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		t0 := time.Now()
		resp, err := client.Do(req)
		require.NoError(b, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		d := time.Since(t0)
		require.Equal(b, http.StatusOK, resp.StatusCode, url)
		return d
	}
	proxied := portal.URL + "/endpoints/vision/" + job.Name + "/v1/models"
	require.Eventually(b, func() bool {
		req, _ := http.NewRequest(http.MethodGet, proxied, nil)
		req.Header.Set("Authorization", "Bearer "+key.Secret)
		resp, err := client.Do(req)
		if err != nil {
			return false
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 2*time.Minute, 500*time.Millisecond, "the endpoint becomes ready")
	pods, err := env.Kube.CoreV1().Pods("team-vision").List(b.Context(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + job.Name})
	require.NoError(b, err)
	require.NotEmpty(b, pods.Items)
	direct := fmt.Sprintf("http://%s:8000/v1/models", pods.Items[0].Status.PodIP)
	for range 50 { // warm both paths' connections
		timed(proxied, key.Secret)
		timed(direct, "")
	}

	b.ResetTimer()
	var viaProxy, straight []time.Duration
	for range b.N {
		for range proxyBenchCalls {
			viaProxy = append(viaProxy, timed(proxied, key.Secret))
			straight = append(straight, timed(direct, ""))
		}
	}
	b.StopTimer()
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(latencyQuantile(viaProxy, 0.50)), "p50-ms")
	b.ReportMetric(ms(latencyQuantile(viaProxy, 0.99)), "p99-ms")
	b.ReportMetric(ms(latencyQuantile(straight, 0.50)), "direct_p50-ms")
	b.ReportMetric(ms(latencyQuantile(straight, 0.99)), "direct_p99-ms")
	b.ReportMetric(0, "ns/op")
}

// profileCSRF reads a CSRF token for the client's session from its profile page.
func profileCSRF(b testing.TB, c *http.Client, p *Portal) string {
	b.Helper()
	resp, err := c.Get(p.URL + "/profile")
	require.NoError(b, err)
	defer resp.Body.Close()
	doc, err := goquery.NewDocumentFromReader(resp.Body)
	require.NoError(b, err)
	v, _ := doc.Find(`input[name="gorilla.csrf.Token"]`).First().Attr("value")
	require.NotEmpty(b, v)
	return v
}

// formSignIn signs user in through the dev IdP's login form with a plain
// HTTP client and returns it with the session (redirects not followed
// afterwards).
func formSignIn(b testing.TB, p *Portal, user string) *http.Client {
	b.Helper()
	return signInThrough(b, p, user, &http.Client{Timeout: 30 * time.Second})
}

// latencyQuantile is the q-quantile (0..1) of latencies, nearest rank.
func latencyQuantile(lat []time.Duration, q float64) time.Duration {
	s := slices.Clone(lat)
	slices.Sort(s)
	i := int(q*float64(len(s)) + 0.5)
	return s[min(max(i-1, 0), len(s)-1)]
}
