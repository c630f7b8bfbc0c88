package web

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gantry-dev/gantry/internal/store"
)

const tenMiB = 10 << 20

// endlessForm is an urlencoded form body of n bytes made on the fly, so the
// test's own client holds none of it in memory.
type endlessForm struct{ left int }

func (r *endlessForm) Read(p []byte) (int, error) {
	if r.left <= 0 {
		return 0, io.EOF
	}
	n := min(len(p), r.left)
	for i := range n {
		p[i] = 'x'
	}
	if r.left == tenMiB { // the first bytes name the field
		copy(p, "name=")
	}
	r.left -= n
	return n, nil
}

// heapInUse is the live heap after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// sendLarge posts a 10 MiB body; chunked leaves its length undeclared.
func sendLarge(t *testing.T, u, contentType string, chunked bool) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, u, &endlessForm{left: tenMiB})
	require.NoError(t, err)
	req.Header.Set("Content-Type", contentType)
	if !chunked {
		req.ContentLength = tenMiB
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, string(body)
}

func TestTenMiBBodyIsRefusedWith413AndNotKeptInMemory(t *testing.T) {
	p := startPortal(t, portalOptions{})
	b := newBrowser(t)
	b.login(p.URL, "/", "alice")
	profile := b.get(p.URL + "/profile")
	require.Equal(t, http.StatusOK, profile.Status)

	// Warm up connections and lazily built state before measuring.
	sendLarge(t, p.URL+"/profile/tokens", "application/x-www-form-urlencoded", false)
	before := heapInUse()
	for _, chunked := range []bool{false, true} {
		status, _, body := sendLarge(t, p.URL+"/profile/tokens", "application/x-www-form-urlencoded", chunked)
		assert.Equal(t, http.StatusRequestEntityTooLarge, status, "form, chunked=%v", chunked)
		assert.Contains(t, body, "The request body is larger than the 1 MiB this portal accepts", "an HTML page in words")

		status, hdr, body := sendLarge(t, p.URL+"/api/v1/me", "application/json", chunked)
		if !chunked { // an unread undeclared body is the method's problem, not the size's
			assert.Equal(t, http.StatusRequestEntityTooLarge, status, "JSON")
			assert.Contains(t, hdr.Get("Content-Type"), "application/json")
			var apiErr struct{ Code, Message string }
			require.NoError(t, json.Unmarshal([]byte(body), &apiErr), body)
			assert.Equal(t, "body_too_large", apiErr.Code)
			assert.Contains(t, apiErr.Message, "1 MiB")
		}
	}
	after := heapInUse()
	grew := int64(after) - int64(before)
	assert.Less(t, grew, int64(2<<20), "the live heap grew by %d bytes after three 10 MiB bodies", grew)

	// A body under the limit still works.
	created := b.post(p.URL+"/profile/tokens", url.Values{"gorilla.csrf.Token": {profile.csrf()}, "name": {"small"}, "expires_in_days": {"7"}})
	assert.Less(t, created.Status, 400, created.Body)
}

func TestForwardedForIsBelievedOnlyFromTrustedProxies(t *testing.T) {
	cases := map[string]struct {
		trusted []string
		wantIP  string
	}{
		"untrusted peer": {wantIP: "127.0.0.1"},
		"trusted proxy":  {trusted: []string{"127.0.0.1/32"}, wantIP: "203.0.113.9"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := startPortal(t, portalOptions{trustedProxies: tc.trusted})
			b := newBrowser(t)
			b.client.Transport = forwardedFor{ip: "203.0.113.9"}
			home := b.login(p.URL, "/", "alice")
			require.Equal(t, "alice", home.text("user-name"))

			logins, err := p.Store.AuditEntries(context.Background(), store.AuditFilter{Action: "login"})
			require.NoError(t, err)
			require.Len(t, logins, 1)
			assert.Equal(t, tc.wantIP, logins[0].IP, "the audit log's client address")
		})
	}
}

// forwardedFor adds X-Forwarded-For to every request, as a client that
// wants to hide its address would.
type forwardedFor struct{ ip string }

func (f forwardedFor) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Forwarded-For", f.ip)
	return http.DefaultTransport.RoundTrip(r)
}

func TestAnonymousLoginVisitsWriteNoSessionRows(t *testing.T) {
	p := startPortal(t, portalOptions{})
	count := func() int {
		var n int
		require.NoError(t, p.Store.SQL().QueryRowContext(context.Background(), `SELECT count(*) FROM sessions`).Scan(&n))
		return n
	}
	before := count()
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for range 25 {
		resp, err := noFollow.Get(p.URL + "/auth/login?next=/profile")
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusFound, resp.StatusCode)
	}
	assert.Equal(t, before, count(), "25 anonymous visits to /auth/login add no session row")

	b := newBrowser(t)
	got := b.login(p.URL, "/profile", "bob")
	assert.Equal(t, "bob", got.text("user-name"), "a real sign-in still completes")
	assert.Equal(t, "/profile", got.URL.Path)
	assert.Equal(t, before+1, count(), "the signed-in session is stored")
}

func TestReadyzNamesTheFailedDependencyWithoutItsErrorText(t *testing.T) {
	p := startPortal(t, portalOptions{ready: func(p *portal) []ReadinessCheck {
		return []ReadinessCheck{
			{Name: "database", Check: p.Store.Ping},
			{Name: "prometheus", Check: func(context.Context) error {
				return errors.New(`dial tcp 10.1.2.3:9090: connect: connection refused (user=gantry password=hunter2)`)
			}},
			{Name: "kubernetes", Check: func(ctx context.Context) error {
				<-ctx.Done()
				return ctx.Err()
			}},
		}
	}})
	status, body, _ := getText(t, p.URL+"/readyz")
	assert.Equal(t, http.StatusServiceUnavailable, status)
	assert.Equal(t, "database: ok\nprometheus: failed\nkubernetes: failed (no answer within 1s)\n", body)
}

func TestProbesAndMetricsOnTheirOwnPort(t *testing.T) {
	p := startPortal(t, portalOptions{separateProbes: true})
	require.NotEmpty(t, p.ProbeURL)
	status, body, _ := getText(t, p.ProbeURL+"/healthz")
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, "ok\n", body)
	status, body, _ = getText(t, p.ProbeURL+"/readyz")
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, "database: ok\n", body)

	b := newBrowser(t)
	b.login(p.URL, "/", "alice")
	require.Equal(t, http.StatusOK, b.get(p.URL+"/profile").Status)
	status, metrics, _ := getText(t, p.ProbeURL+"/metrics")
	require.Equal(t, http.StatusOK, status)
	assert.Contains(t, metrics, `gantry_http_requests_total{code="200",method="GET",route="/profile"}`, "the portal's requests are counted")
	assert.False(t, strings.Contains(metrics, `route="/healthz"`), "probes are not counted as portal traffic")

	for _, path := range []string{"/metrics", "/readyz", "/healthz"} {
		status, _, _ = getText(t, p.URL+path)
		assert.Equal(t, http.StatusNotFound, status, "%s is not on the users' port", path)
	}
}
