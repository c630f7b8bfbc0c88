package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gantry-dev/gantry/internal/devcluster/stacktest"
	"github.com/gantry-dev/gantry/internal/store"
	"github.com/gantry-dev/gantry/migrations"
)

// Lease timings of the replica tests: short, so a take-over is quick to see.
const (
	testLeaseDuration = 4 * time.Second
	testRenewDeadline = 3 * time.Second
	testRetryPeriod   = 500 * time.Millisecond
)

// replicaOptions configure a portal as one of several replicas sharing the
// database and competing for one Lease in its own namespace.
func replicaOptions(dsn, leaseNamespace string) []PortalOption {
	return []PortalOption{
		WithDatabase(dsn),
		WithEnv("GANTRY_LEADER_ELECTION", "true"),
		WithEnv("GANTRY_LEADER_ELECTION_NAMESPACE", leaseNamespace),
		WithEnv("GANTRY_LEADER_ELECTION_NAME", "gantry"),
		WithEnv("GANTRY_LEADER_ELECTION_LEASE_DURATION", testLeaseDuration.String()),
		WithEnv("GANTRY_LEADER_ELECTION_RENEW_DEADLINE", testRenewDeadline.String()),
		WithEnv("GANTRY_LEADER_ELECTION_RETRY_PERIOD", testRetryPeriod.String()),
	}
}

// startReplicas launches n portals at once on one fresh database and waits
// until all of them are healthy.
func startReplicas(t *testing.T, n int) ([]*Portal, string) {
	t.Helper()
	env := stacktest.Stack(t)
	dsn := stacktest.Postgres(t)
	ns := env.Namespace(t, "lease", nil)
	portals := make([]*Portal, n)
	for i := range portals {
		portals[i] = LaunchPortal(t, replicaOptions(dsn, ns)...)
	}
	for _, p := range portals {
		p.WaitHealthy(t)
	}
	return portals, dsn
}

func TestReplicasStartingTogetherApplyEachMigrationOnce(t *testing.T) {
	portals, dsn := startReplicas(t, 2)

	db, err := store.Open(t.Context(), dsn)
	require.NoError(t, err)
	defer db.Close()
	rows, err := db.SQL().QueryContext(t.Context(),
		`SELECT version_id, count(*) FROM goose_db_version WHERE version_id > 0 GROUP BY version_id ORDER BY version_id`)
	require.NoError(t, err)
	defer rows.Close()
	applied := map[int64]int{}
	for rows.Next() {
		var version int64
		var n int
		require.NoError(t, rows.Scan(&version, &n))
		applied[version] = n
	}
	require.NoError(t, rows.Err())

	want := map[int64]int{}
	files, err := fs.Glob(migrations.FS(), "*.sql")
	require.NoError(t, err)
	for _, f := range files {
		var version int64
		_, err := fmt.Sscanf(f, "%05d_", &version)
		require.NoError(t, err, f)
		want[version] = 1
	}
	require.NotEmpty(t, want)
	assert.Equal(t, want, applied, "every migration recorded exactly once")
	logged := 0
	for _, p := range portals {
		logged += strings.Count(p.Log(), `"msg":"migration applied"`)
	}
	assert.Equal(t, len(want), logged, "each migration applied by one replica only")
}

func TestUserSignedInOnOneReplicaIsSignedInOnTheOther(t *testing.T) {
	portals, _ := startReplicas(t, 2)
	first, second := portals[0], portals[1]

	b := NewBrowser(t, first)
	b.LoginAs("alice")
	client := clientWithBrowserCookies(t, b, second)

	resp, err := client.Get(second.URL + "/profile")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "the other replica should serve the profile page, not send to login")
	assert.Contains(t, string(body), `data-testid="user-name"`)
	assert.Contains(t, string(body), ">alice<")

	// Without the cookie the same request goes to login: the session is what counts.
	anon := noRedirectClient(nil)
	resp, err = anon.Get(second.URL + "/profile")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusFound, resp.StatusCode)
}

func TestKillingTheLeaderMovesTheLoopsToTheOtherReplica(t *testing.T) {
	portals, _ := startReplicas(t, 2)

	var leaderIdx int
	require.Eventually(t, func() bool {
		n := 0
		for i, p := range portals {
			if leads(t, p) {
				leaderIdx, n = i, n+1
			}
		}
		return n == 1
	}, 2*testLeaseDuration, 100*time.Millisecond, "exactly one replica should lead")
	old, next := portals[leaderIdx], portals[1-leaderIdx]
	assert.Contains(t, old.Log(), "leading: background loops started")
	assert.NotContains(t, next.Log(), "leading: background loops started")

	old.Kill(t)
	t0 := time.Now()
	// A killed leader does not release the Lease: the other takes over once
	// it expires, within the lease duration plus a couple of retries.
	limit := testLeaseDuration + 2*testRetryPeriod + 2*time.Second
	require.Eventually(t, func() bool { return leads(t, next) }, limit, 100*time.Millisecond,
		"the surviving replica did not take over the loops")
	took := time.Since(t0)
	t.Logf("take-over after kill -9 of the leader took %s (lease %s)", took.Round(time.Millisecond), testLeaseDuration)
	assert.Contains(t, next.Log(), "leading: background loops started")
}

func TestGracefulShutdownFinishesTheRequestInFlight(t *testing.T) {
	portals, _ := startReplicas(t, 2)
	p, other := portals[0], portals[1]
	require.Eventually(t, func() bool { return leads(t, p) || leads(t, other) }, 2*testLeaseDuration, 100*time.Millisecond)
	pLed := leads(t, p)

	b := NewBrowser(t, p)
	b.LoginAs("alice")
	client := clientWithBrowserCookies(t, b, p)
	token := csrfToken(t, client, p.URL+"/profile")
	u, err := url.Parse(p.URL)
	require.NoError(t, err)

	// A sign-out whose form body is held back: with Expect: 100-continue
	// the portal says "100 Continue" once its handler reads the body, so
	// the request is provably in flight when the portal is told to stop.
	conn, err := net.Dial("tcp", u.Host)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(30*time.Second)))
	form := url.Values{"gorilla.csrf.Token": {token}}.Encode()
	var cookies []string
	for _, c := range client.Jar.Cookies(u) {
		cookies = append(cookies, c.Name+"="+c.Value)
	}
	head := fmt.Sprintf("POST /auth/logout HTTP/1.1\r\nHost: %s\r\nOrigin: %s\r\nReferer: %s/profile\r\nCookie: %s\r\n"+
		"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: %d\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n",
		u.Host, p.URL, p.URL, strings.Join(cookies, "; "), len(form))
	_, err = io.WriteString(conn, head)
	require.NoError(t, err)
	replies := bufio.NewReader(conn)
	cont, err := http.ReadResponse(replies, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusContinue, cont.StatusCode, "the handler should be waiting for the body")

	p.Terminate(t)
	require.Eventually(t, func() bool { return strings.Contains(p.Log(), `"msg":"shutting down"`) }, 10*time.Second, 50*time.Millisecond)
	// New connections are refused while the old request is still open.
	require.Eventually(t, func() bool {
		c, err := net.DialTimeout("tcp", u.Host, time.Second)
		if err != nil {
			return true
		}
		c.Close()
		return false
	}, 5*time.Second, 50*time.Millisecond, "the stopping portal still accepts new connections")

	_, err = io.WriteString(conn, form)
	require.NoError(t, err)
	resp, err := http.ReadResponse(replies, nil)
	require.NoError(t, err, "the request in flight was cut off")
	resp.Body.Close()
	assert.Equal(t, http.StatusSeeOther, resp.StatusCode, "sign-out should complete with its redirect")

	assert.NoError(t, p.Wait(t), "portal should exit cleanly after draining")
	if pLed {
		// The Lease was released on the way out: the other replica leads
		// well before it would have expired.
		require.Eventually(t, func() bool { return leads(t, other) }, testLeaseDuration/2, 100*time.Millisecond)
	}
}

// leaderOf waits until one of two replicas leads and returns it and the other.
func leaderOf(t *testing.T, portals []*Portal, within time.Duration) (leader, other *Portal) {
	t.Helper()
	require.Eventually(t, func() bool {
		for i, p := range portals {
			if leads(t, p) {
				leader, other = p, portals[1-i]
				return true
			}
		}
		return false
	}, within, 100*time.Millisecond, "one replica should lead")
	return leader, other
}

// leads reports whether the portal's /metrics says it holds the Lease.
func leads(t *testing.T, p *Portal) bool {
	t.Helper()
	resp, err := http.Get(p.URL + "/metrics")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return false
	}
	return regexp.MustCompile(`(?m)^gantry_leader 1$`).Match(b)
}

// clientWithBrowserCookies is an HTTP client holding the browser's cookies
// for the portal p (cookies are per host, not per port).
func clientWithBrowserCookies(t *testing.T, b *Browser, p *Portal) *http.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	res, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{p.URL}})
	require.NoError(t, err)
	got := res.Cookies
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	u, err := url.Parse(p.URL)
	require.NoError(t, err)
	var cookies []*http.Cookie
	for _, c := range got {
		cookies = append(cookies, &http.Cookie{Name: c.Name, Value: c.Value, Path: c.Path})
	}
	require.NotEmpty(t, cookies, "browser has no portal cookies after login")
	jar.SetCookies(u, cookies)
	return noRedirectClient(jar)
}

func noRedirectClient(jar http.CookieJar) *http.Client {
	return &http.Client{
		Jar:           jar,
		Timeout:       10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

var csrfInput = regexp.MustCompile(`name="gorilla\.csrf\.Token" value="([^"]+)"`)

// csrfToken reads the CSRF token of a form on the page at pageURL.
func csrfToken(t *testing.T, client *http.Client, pageURL string) string {
	t.Helper()
	resp, err := client.Get(pageURL)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	m := csrfInput.FindSubmatch(b)
	require.NotNil(t, m, "no CSRF field on %s", pageURL)
	return string(m[1])
}
