package web

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gantry-dev/gantry/internal/devcluster"
)

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func getText(t *testing.T, u string) (int, string, http.Header) {
	t.Helper()
	resp, err := http.Get(u)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body), resp.Header
}

func adminExec(t *testing.T, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, devcluster.PostgresAdminURL())
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	require.NoError(t, err, sql)
}

func TestReadyzFailsWhileDatabaseIsGoneAndRecovers(t *testing.T) {
	p := startPortal(t, portalOptions{})
	u, err := url.Parse(p.DSN)
	require.NoError(t, err)
	dbName := strings.TrimPrefix(u.Path, "/")

	status, body, _ := getText(t, p.URL+"/readyz")
	require.Equal(t, http.StatusOK, status, body)
	assert.Equal(t, "database: ok\n", body)

	adminExec(t, fmt.Sprintf(`DROP DATABASE %q WITH (FORCE)`, dbName))
	status, body, _ = getText(t, p.URL+"/readyz")
	assert.Equal(t, http.StatusServiceUnavailable, status)
	assert.Contains(t, body, "database: failed")

	status, _, _ = getText(t, p.URL+"/healthz")
	assert.Equal(t, http.StatusOK, status, "liveness does not depend on the database")

	adminExec(t, fmt.Sprintf(`CREATE DATABASE %q OWNER gantry`, dbName))
	require.Eventually(t, func() bool {
		status, _, _ := getText(t, p.URL+"/readyz")
		return status == http.StatusOK
	}, 10*time.Second, 100*time.Millisecond, "readyz recovers when the database is back")
}

func TestReadyzNamesUnreachableAPIServer(t *testing.T) {
	kube, err := kubernetes.NewForConfig(&rest.Config{Host: "https://127.0.0.1:1", Timeout: time.Second})
	require.NoError(t, err)
	p := startPortal(t, portalOptions{ready: func(p *portal) []ReadinessCheck {
		return []ReadinessCheck{{Name: "database", Check: p.Store.Ping}, APIServerCheck(kube.Discovery())}
	}})
	status, body, _ := getText(t, p.URL+"/readyz")
	assert.Equal(t, http.StatusServiceUnavailable, status)
	assert.Contains(t, body, "database: ok")
	assert.Contains(t, body, "kubernetes: failed")
}

func TestSecurityHeadersAndMetrics(t *testing.T) {
	p := startPortal(t, portalOptions{})
	b := newBrowser(t)
	b.login(p.URL, "/", "alice")
	got := b.get(p.URL + "/profile")
	require.Equal(t, http.StatusOK, got.Status)
	csp := got.Header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'self'", "script-src 'self'", "frame-ancestors 'none'", "form-action 'self' http://127.0.0.1:5556"} {
		assert.Contains(t, csp, want)
	}
	assert.NotContains(t, csp, "unsafe-inline")
	assert.Equal(t, "nosniff", got.Header.Get("X-Content-Type-Options"))
	assert.Equal(t, "same-origin", got.Header.Get("Referrer-Policy"))
	assert.Equal(t, "DENY", got.Header.Get("X-Frame-Options"))

	status, _, _ := getText(t, p.URL+"/static/css/gantry.css")
	assert.Equal(t, http.StatusOK, status, "static assets are embedded")
	missing := b.get(p.URL + "/no/such/page")
	assert.Equal(t, http.StatusNotFound, missing.Status)
	assert.True(t, missing.has("error-page"))

	b.post(p.URL+"/profile/tokens/42/revoke", url.Values{"gorilla.csrf.Token": {got.csrf()}})
	status, metrics, _ := getText(t, p.URL+"/metrics")
	require.Equal(t, http.StatusOK, status)
	assert.Contains(t, metrics, `gantry_http_requests_total{code="200",method="GET",route="/profile"}`)
	assert.Contains(t, metrics, `gantry_http_requests_total{code="404",method="POST",route="/profile/tokens/:id/revoke"}`)
	assert.Contains(t, metrics, `gantry_http_request_duration_seconds_bucket{method="GET",route="/profile"`)
}
