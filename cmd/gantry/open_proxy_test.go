package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gantry-dev/gantry/internal/launch"
	"github.com/gantry-dev/gantry/internal/store"
)

// endpointKey is a key as POST /api/v1/teams/{team}/jobs/{name}/keys answers.
type endpointKey struct {
	ID     int64  `json:"id"`
	Secret string `json:"secret"`
	URL    string `json:"url"`
}

// callEndpoint sends a request to the endpoint proxy with key ("" for none).
func callEndpoint(t *testing.T, base, method, path, key, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	require.NoError(t, err)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	require.NoError(t, err)
	return resp
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

// TestEndpointThroughPortal: an inference endpoint is called through
// /endpoints/{team}/{name}/ with a key of its own: the stand-in at the
// pod's IP answers (a streamed completion arrives in chunks); no key, a
// revoked key and another endpoint's key get 401; the calls are counted
// on the job page, in /metrics and hourly in Postgres.
func TestEndpointThroughPortal(t *testing.T) {
	p := startTestPortal(t, "--seed-templates", repoFile(t, "deploy/templates"))
	spec := fetchSpec(t, p.URL)
	u := p.signIn(t, "alice")
	alice := apiClient{t: t, u: p.withToken(t, "alice", apiToken(t, u, u.csrf())), spec: spec}
	start := func() string {
		var job struct{ Name string }
		require.Equal(t, http.StatusCreated, alice.call(http.MethodPost, "/api/v1/teams/vision/jobs",
			`{"template":"vllm-inference","parameters":{"gpus":"1","memory":"16Gi"},"launchId":"`+launch.NewLaunchID()+`"}`, &job))
		t.Cleanup(func() { alice.u.call(http.MethodDelete, "/api/v1/teams/vision/jobs/"+job.Name, nil, "") })
		return job.Name
	}
	endpoint, other := start(), start()
	newKey := func(name string) endpointKey {
		var k endpointKey
		require.Equal(t, http.StatusCreated, alice.call(http.MethodPost, "/api/v1/teams/vision/jobs/"+name+"/keys", `{"label":"test","expiresInDays":1}`, &k))
		require.True(t, strings.HasPrefix(k.Secret, "gek_"), "the key's secret is in the answer: %+v", k)
		return k
	}
	key, otherKey, revoked := newKey(endpoint), newKey(other), newKey(endpoint)
	base := "/endpoints/vision/" + endpoint

	// The endpoint answers once its pod is ready: until then the proxy says why.
	var models string
	waits := 0 // answers "no ready replica yet" (503), counted as failed calls
	require.Eventually(t, func() bool {
		resp := callEndpoint(t, p.URL, http.MethodGet, base+"/v1/models", key.Secret, "")
		models = readAll(t, resp)
		if resp.StatusCode == http.StatusServiceUnavailable {
			waits++
			assert.Contains(t, models, "endpoint_unavailable")
		}
		return resp.StatusCode == http.StatusOK
	}, 90*time.Second, 500*time.Millisecond, "the endpoint becomes ready; last answer: %s", models)
	assert.Contains(t, models, `"id":"gantry-stand-in"`, "the stand-in at the pod's IP answered")

	// A streamed completion arrives in chunks, not all at the end.
	resp := callEndpoint(t, p.URL, http.MethodPost, base+"/v1/completions", key.Secret, `{"model":"m","prompt":"say hello","stream":true}`)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	var arrivals []time.Time
	var text strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		arrivals = append(arrivals, time.Now())
		var chunk struct {
			Choices []struct{ Text string }
		}
		require.NoError(t, json.Unmarshal([]byte(data), &chunk))
		text.WriteString(chunk.Choices[0].Text)
	}
	resp.Body.Close()
	require.Len(t, arrivals, 6, "six chunks")
	assert.Equal(t, "Hello from the Gantry stand-in.", text.String())
	assert.GreaterOrEqual(t, arrivals[5].Sub(arrivals[0]), 150*time.Millisecond,
		"the chunks arrive as the stand-in sends them (40 ms apart), not buffered to the end")

	refusals := map[string]string{"no key": "", "a revoked key": revoked.Secret, "another endpoint's key": otherKey.Secret, "a made-up key": "gek_made-up"}
	require.Equal(t, http.StatusOK, alice.call(http.MethodPost, "/api/v1/teams/vision/jobs/"+endpoint+"/keys/"+strconv.FormatInt(revoked.ID, 10)+"/revoke", "", nil))
	for what, k := range refusals {
		resp := callEndpoint(t, p.URL, http.MethodGet, base+"/v1/models", k, "")
		body := readAll(t, resp)
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "%s: %s", what, body)
		var e apiErr
		require.NoError(t, json.Unmarshal([]byte(body), &e), body)
		assert.Equal(t, "invalid_endpoint_key", e.Code, what)
	}
	var keys struct {
		Keys []struct {
			ID     int64 `json:"id"`
			Active bool  `json:"active"`
		} `json:"keys"`
	}
	require.Equal(t, http.StatusOK, alice.call(http.MethodGet, "/api/v1/teams/vision/jobs/"+endpoint+"/keys", "", &keys))
	require.Len(t, keys.Keys, 2)
	for _, k := range keys.Keys {
		assert.Equal(t, k.ID != revoked.ID, k.Active, "key %d", k.ID)
	}

	// Two calls were served (one streamed), with tokens from the stand-in's
	// usage, after the waits; refused calls never reach the endpoint.
	served := int64(waits + 2)
	page, err := goquery.NewDocumentFromReader(strings.NewReader(must(u.do(http.MethodGet, "/teams/vision/jobs/"+endpoint, nil, ""))))
	require.NoError(t, err)
	assert.Equal(t, p.URL+"/endpoints/vision/"+endpoint+"/", page.Find(`[data-testid="endpoint-url"]`).Text())
	assert.Contains(t, page.Find(`[data-testid="endpoint-curl"]`).Text(), "-H \"Authorization: Bearer $GANTRY_ENDPOINT_KEY\"")
	assert.Equal(t, strconv.FormatInt(served, 10), strings.TrimSpace(page.Find(`[data-testid="endpoint-requests"]`).Text()))
	assert.Equal(t, fmt.Sprintf("%.1f%% (%d failed)", 100*float64(waits)/float64(served), waits),
		strings.TrimSpace(page.Find(`[data-testid="endpoint-error-rate"]`).Text()))
	metrics := must(p.signIn(t, "").do(http.MethodGet, "/metrics", nil, ""))
	assert.Contains(t, metrics, `gantry_endpoint_requests_total{code="200",endpoint="`+endpoint+`",team="vision"} 2`)
	assert.Contains(t, metrics, `gantry_endpoint_tokens_total{endpoint="`+endpoint+`",team="vision",type="completion"} 6`)

	db, err := store.Open(context.Background(), p.DSN)
	require.NoError(t, err)
	hour := time.Now().UTC().Truncate(time.Hour)
	var rows []store.EndpointUsageHour
	require.Eventually(t, func() bool {
		rows, err = db.EndpointHourlyUsage(context.Background(), "vision", endpoint, hour.Add(-time.Hour), hour.Add(time.Hour))
		return err == nil && sumRequests(rows) == served
	}, 60*time.Second, time.Second, "the portal flushes the hour's counts to Postgres")
	var failed int64
	for _, r := range rows {
		failed += r.Errors
	}
	assert.Equal(t, int64(waits), failed)
	var completion int64
	for _, r := range rows {
		completion += r.CompletionTokens
	}
	assert.Equal(t, int64(6), completion, "tokens from the streamed completion's usage")
}

// TestNotebookThroughPortal: the owner opens a notebook through the
// portal (the stand-in's page under the notebook's base URL; a WebSocket
// from the portal's origin echoes, one from elsewhere is refused); a
// teammate is refused until the owner shares it, another team always;
// the portal's cookies never reach the notebook; a stopped notebook's
// Open link says it is stopped and offers Resume.
func TestNotebookThroughPortal(t *testing.T) {
	p := startTestPortal(t, "--seed-templates", repoFile(t, "deploy/templates"))
	spec := fetchSpec(t, p.URL)
	alice, bob, carol := p.signIn(t, "alice"), p.signIn(t, "bob"), p.signIn(t, "carol")
	api := apiClient{t: t, u: p.withToken(t, "alice", apiToken(t, alice, alice.csrf())), spec: spec}
	var job struct{ Name string }
	require.Equal(t, http.StatusCreated, api.call(http.MethodPost, "/api/v1/teams/vision/jobs",
		`{"template":"jupyter-pytorch","parameters":{"gpus":"1"},"launchId":"`+launch.NewLaunchID()+`"}`, &job))
	t.Cleanup(func() { api.u.call(http.MethodDelete, "/api/v1/teams/vision/jobs/"+job.Name, nil, "") })
	open := "/teams/vision/jobs/" + job.Name + "/open/"

	var page string
	require.Eventually(t, func() bool {
		var status int
		status, page = alice.do(http.MethodGet, open, nil, "")
		return status == http.StatusOK
	}, 90*time.Second, 500*time.Millisecond, "the notebook opens for its owner; last answer: %s", page)
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(page))
	require.NoError(t, err)
	assert.Equal(t, open, doc.Find(`[data-testid="base-path"]`).Text(), "the stand-in serves under the notebook's base URL")

	_, headers := alice.do(http.MethodGet, open+"headers", nil, "")
	assert.NotContains(t, headers, "gantry_session", "the portal's session cookie stays with the portal")
	assert.NotContains(t, headers, "gantry_csrf")

	ws := func(u *user, origin string) (string, int) {
		pu, _ := url.Parse(p.URL)
		d := websocket.Dialer{Jar: u.client.Jar, HandshakeTimeout: 10 * time.Second}
		conn, resp, err := d.Dial("ws://"+pu.Host+open+"ws", http.Header{"Origin": {origin}})
		if err != nil {
			if resp != nil {
				return "", resp.StatusCode
			}
			return "", 0
		}
		defer conn.Close()
		require.NoError(t, conn.WriteMessage(websocket.TextMessage, []byte("ping")))
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, msg, err := conn.ReadMessage()
		require.NoError(t, err)
		return string(msg), http.StatusSwitchingProtocols
	}
	msg, status := ws(alice, p.URL)
	assert.Equal(t, http.StatusSwitchingProtocols, status)
	assert.Equal(t, "echo: ping", msg, "a WebSocket message round-trips through the proxy")
	_, status = ws(alice, "http://evil.example")
	assert.Equal(t, http.StatusForbidden, status, "a WebSocket from another origin is refused")

	refusedPage := func(u *user) {
		t.Helper()
		status, body := u.do(http.MethodGet, open, nil, "")
		assert.Equal(t, http.StatusForbidden, status, "%s is refused", u.name)
		assert.Contains(t, body, "Only the notebook&#39;s owner can open it", "%s reads why", u.name)
	}
	refusedPage(bob)
	refusedPage(carol)
	require.Equal(t, http.StatusOK, api.call(http.MethodPost, "/api/v1/teams/vision/jobs/"+job.Name+"/share", `{"shared":true}`, nil))
	status, page = bob.do(http.MethodGet, open, nil, "")
	assert.Equal(t, http.StatusOK, status, "bob opens it once alice shared it")
	assert.Contains(t, page, "Gantry stand-in server")
	refusedPage(carol)

	require.Equal(t, http.StatusAccepted, api.call(http.MethodPost, "/api/v1/teams/vision/jobs/"+job.Name+"/stop", "", nil))
	require.Eventually(t, func() bool {
		status, page = alice.do(http.MethodGet, open, nil, "")
		return status == http.StatusServiceUnavailable && strings.Contains(page, `data-reason="stopped"`)
	}, 60*time.Second, 500*time.Millisecond, "the stopped notebook's page; last: %d", status)
	doc, err = goquery.NewDocumentFromReader(strings.NewReader(page))
	require.NoError(t, err)
	assert.Contains(t, doc.Find(`[data-testid="open-unavailable"]`).Text(), "The notebook is stopped")
	action, _ := doc.Find(`[data-testid="resume"]`).Closest("form").Attr("action")
	assert.Equal(t, "/teams/vision/jobs/"+job.Name+"/resume", action, "it offers Resume")
}

func sumRequests(rows []store.EndpointUsageHour) int64 {
	var n int64
	for _, r := range rows {
		n += r.Requests
	}
	return n
}

func must(_ int, body string) string { return body }
