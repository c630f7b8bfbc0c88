package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/gantry-dev/gantry/internal/devcluster"
	"github.com/gantry-dev/gantry/internal/devcluster/stacktest"
	"github.com/gantry-dev/gantry/internal/naming"
)

// pgRestartRequests is how many quota requests the lead decides at once
// when PostgreSQL goes down; one more is decided while it is down.
const pgRestartRequests = 8

// pgOutage is how long PostgreSQL stays down: long enough for /readyz, a
// page and the API to be seen answering without it.
const pgOutage = 3 * time.Second

// TestPostgresRestartDuringApprovalsAppliesEachDecisionOnce stops
// PostgreSQL (a fast shutdown, as a restart does) the moment the first of
// several concurrent approvals has changed the team's ClusterQueue, keeps
// it down for a few seconds and starts it again. Every decision ends
// applied or refused in words, never as a bare 500; /readyz names the
// database while it is down; retrying the refused decisions applies each
// once; the queue's quota is the sum of the grants, with one audit entry
// per decision; and both users stay signed in with their records kept.
func TestPostgresRestartDuringApprovalsAppliesEachDecisionOnce(t *testing.T) {
	env := stacktest.Stack(t)
	team := env.Team(t, stacktest.TeamSpec{
		Quotas:       map[string]corev1.ResourceList{e2eFlavor: {e2eGPU: resource.MustParse("0")}},
		MemberGroups: []string{"vision-researchers"}, LeadGroups: []string{"vision-leads"},
	})
	seed := filepath.Join(t.TempDir(), "teams.yaml")
	require.NoError(t, os.WriteFile(seed, fmt.Appendf(nil,
		"teams:\n  - name: %s\n    memberGroups: [vision-researchers]\n    leadGroups: [vision-leads]\n", team.Name), 0o644))
	dsn := stacktest.Postgres(t)
	portal := StartPortal(t, WithDatabase(dsn), WithEnv("GANTRY_SEED_TEAMS", seed))
	dbExec(t, dsn, `INSERT INTO team_ceilings (team, flavor, resource, ceiling) VALUES ($1, $2, $3, 1000)`, team.Name, e2eFlavor, e2eGPU)

	alice := newAPIUser(t, portal, "alice")
	bob := newAPIUser(t, portal, "bob")
	ids := make([]int64, pgRestartRequests+1)
	want := int64(0)
	for i := range ids {
		var r struct{ ID int64 }
		delta := int64(i%3 + 1)
		status, body := alice.call(http.MethodPost, "/api/v1/teams/"+team.Name+"/quota-requests",
			fmt.Sprintf(`{"flavor":%q,"resource":%q,"gpus":%d,"reason":"Restart drill %d"}`, e2eFlavor, e2eGPU, delta, i), &r)
		require.Equal(t, http.StatusCreated, status, body)
		ids[i], want = r.ID, want+delta
	}
	wave, late := ids[:pgRestartRequests], ids[pgRestartRequests]

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cq := naming.ClusterQueue(team.Name)
	w, err := env.Kueue.KueueV1beta2().ClusterQueues().Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + cq})
	require.NoError(t, err)
	defer w.Stop()
	ready := pollReadyz(ctx, portal)

	// The lead approves the wave at once; PostgreSQL goes down once half of
	// the approvals reached the cluster, while the others are in flight.
	first := make([]decision, len(wave))
	var wg sync.WaitGroup
	for i, id := range wave {
		wg.Add(1)
		go func() { defer wg.Done(); first[i] = bob.decide(id) }()
	}
	waitForGrants(t, w, len(wave)/2)
	stopped := time.Now()
	start := env.Stop(t, devcluster.GroupPostgres)

	// While it is down: readiness names the database, pages and the API say
	// so in words, and a decision is refused.
	require.Eventually(t, func() bool { return ready.sawDown() }, 20*time.Second, 50*time.Millisecond,
		"/readyz never reported the database down")
	during := bob.decide(late)
	assertRefusedInWords(t, during, "a decision while the database is down")
	status, page := bob.get("/approvals")
	assert.Equal(t, http.StatusServiceUnavailable, status, "a page while the database is down")
	assert.Contains(t, page, `data-testid="error-page"`)
	assert.Contains(t, page, "database is not answering")
	var apiErr apiErrorShape
	status, body := alice.call(http.MethodGet, "/api/v1/quota-requests", "", &apiErr)
	assert.Equal(t, http.StatusServiceUnavailable, status, body)
	assert.Equal(t, "database_unavailable", apiErr.Code, body)
	assert.Contains(t, apiErr.Message, "try again in a moment")
	if left := pgOutage - time.Since(stopped); left > 0 {
		time.Sleep(left) // the outage lasts its length whatever the machine's speed
	}
	require.NoError(t, start())
	require.Eventually(t, func() bool { return ready.up() }, 30*time.Second, 50*time.Millisecond,
		"/readyz did not recover after PostgreSQL started again")
	outage := ready.upAt().Sub(stopped)
	wg.Wait()
	ready.stop()

	// Every decision of the wave was applied or refused in words: the
	// database's refusal, or a race lost on the ClusterQueue to the other
	// approvals (nothing applied either way).
	var refused []int64
	committed, raced := 0, 0
	for i, d := range first {
		switch {
		case d.status == http.StatusOK:
			committed++
			continue
		case d.status == http.StatusConflict && d.err.Code == "conflict" && strings.HasPrefix(d.err.Message, "Someone changed this at the same time."):
			raced++
		default:
			assertRefusedInWords(t, d, fmt.Sprintf("approval of request %d during the restart", wave[i]))
		}
		refused = append(refused, wave[i])
	}
	refused = append(refused, late)
	// Retried, each refused decision applies once (a pooled connection the
	// restart cut may refuse one more time, in words).
	for _, id := range refused {
		var d decision
		for attempt := 0; attempt < 3; attempt++ {
			if d = bob.decide(id); d.status == http.StatusOK {
				break
			}
			assertRefusedInWords(t, d, fmt.Sprintf("retried approval of request %d", id))
		}
		assert.Equal(t, http.StatusOK, d.status, "retried approval of request %d: %s", id, d.body)
	}
	// A retry of a decision that did commit answers as decided, and changes nothing.
	again := bob.decide(wave[0])
	assert.Equal(t, http.StatusOK, again.status, again.body)

	assert.Equal(t, want, nominalGPUs(t, portal, team.Name), "the queue's quota is the sum of the grants, each applied once")
	counts := dbCounts(t, dsn, ids)
	for _, id := range ids {
		c := counts[id]
		assert.Equal(t, requestRows{status: "approved", decidedBy: "bob", grants: 1, requested: 1, approved: 1, granted: 1}, c,
			"request %d: one decision, one grant, one audit entry each", id)
	}
	var notices int
	dbQuery(t, dsn, `SELECT count(*) FROM notifications WHERE username = 'alice' AND text LIKE 'bob approved your request%'`, &notices)
	assert.Equal(t, len(ids), notices, "alice got one notice per approval")

	// Both users are still signed in, and see what was there before.
	for _, u := range []*apiUser{alice, bob} {
		status, page := u.get("/profile")
		assert.Equal(t, http.StatusOK, status, "%s is still signed in after the restart", u.name)
		assert.Contains(t, page, ">"+u.name+"<")
	}
	var mine struct{ Requests []struct{ ID int64 } }
	status, body = alice.call(http.MethodGet, "/api/v1/quota-requests", "", &mine)
	require.Equal(t, http.StatusOK, status, body)
	assert.Len(t, mine.Requests, len(ids), "alice's requests filed before the restart are all there")
	t.Logf("PostgreSQL restart: outage %.1fs (readyz down %d times); wave of %d concurrent approvals: %d committed, %d refused by the database and %d by a lost race, each applied once on retry; 1 refused while down, applied on retry",
		outage.Seconds(), ready.downCount(), len(wave), committed, len(refused)-1-raced, raced)
}

// apiUser is a person signed in through the IdP with a plain HTTP client.
type apiUser struct {
	t      *testing.T
	portal *Portal
	name   string
	client *http.Client
	csrf   string
}

func newAPIUser(t *testing.T, p *Portal, name string) *apiUser {
	t.Helper()
	c := formSignIn(t, p, name)
	return &apiUser{t: t, portal: p, name: name, client: c, csrf: profileCSRF(t, c, p)}
}

// call sends a JSON API request with the session cookie and decodes a
// JSON answer into out; it returns the status and the raw body.
func (u *apiUser) call(method, path, body string, out any) (int, string) {
	u.t.Helper()
	req, err := http.NewRequest(method, u.portal.URL+path, strings.NewReader(body))
	require.NoError(u.t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-CSRF-Token", u.csrf)
	req.Header.Set("Origin", u.portal.URL)
	resp, err := u.client.Do(req)
	require.NoError(u.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(u.t, err)
	if out != nil && strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		_ = json.Unmarshal(b, out)
	}
	return resp.StatusCode, string(b)
}

func (u *apiUser) get(path string) (int, string) {
	u.t.Helper()
	resp, err := u.client.Get(u.portal.URL + path)
	require.NoError(u.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(u.t, err)
	return resp.StatusCode, string(b)
}

// decision is how the portal answered one approval.
type decision struct {
	status int
	body   string
	err    apiErrorShape
}

// apiErrorShape is the API's one error shape.
type apiErrorShape struct {
	Error, Code, Message string
}

// decide approves request id through the API; it may run on any goroutine.
func (u *apiUser) decide(id int64) decision {
	req, err := http.NewRequest(http.MethodPost, fmt.Sprintf("%s/api/v1/approvals/%d/decide", u.portal.URL, id),
		strings.NewReader(`{"decision":"approve","comment":"Approved for the restart drill"}`))
	if err != nil {
		return decision{body: err.Error()}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-CSRF-Token", u.csrf)
	req.Header.Set("Origin", u.portal.URL)
	resp, err := u.client.Do(req)
	if err != nil {
		return decision{body: err.Error()}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	d := decision{status: resp.StatusCode, body: string(b)}
	if d.status != http.StatusOK {
		_ = json.Unmarshal(b, &d.err)
	}
	return d
}

// assertRefusedInWords checks a refusal is the database's 503 with its
// stable code and a sentence, not a bare 500 or an error string.
func assertRefusedInWords(t *testing.T, d decision, what string) {
	t.Helper()
	assert.Equal(t, http.StatusServiceUnavailable, d.status, "%s: %s", what, d.body)
	assert.Equal(t, "database_unavailable", d.err.Code, "%s: %s", what, d.body)
	assert.Contains(t, d.err.Message, "The portal's database is not answering, so this was not done.", "%s: %s", what, d.body)
}

// waitForGrants returns once the watched ClusterQueue carries n grants.
func waitForGrants(t *testing.T, w watch.Interface, n int) {
	t.Helper()
	timeout := time.After(time.Minute)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			require.True(t, ok, "the ClusterQueue watch ended before any approval reached the cluster")
			obj, ok := ev.Object.(metav1.Object)
			if !ok {
				continue
			}
			grants := 0
			for k := range obj.GetAnnotations() {
				if strings.HasPrefix(k, naming.AnnotationQuotaGrantPrefix) {
					grants++
				}
			}
			if grants >= n {
				return
			}
		case <-timeout:
			t.Fatal("no approval reached the ClusterQueue within a minute")
		}
	}
}

// readiness polls /readyz and remembers what it saw.
type readiness struct {
	mu      sync.Mutex
	down    int
	wasDown bool
	upSince time.Time
	done    chan struct{}
	stopped chan struct{}
}

func pollReadyz(ctx context.Context, p *Portal) *readiness {
	r := &readiness{done: make(chan struct{}), stopped: make(chan struct{})}
	client := &http.Client{Timeout: 3 * time.Second}
	go func() {
		defer close(r.stopped)
		for {
			status, body := 0, ""
			if req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/readyz", nil); err == nil {
				if resp, err := client.Do(req); err == nil {
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					status, body = resp.StatusCode, string(b)
				}
			}
			r.mu.Lock()
			switch {
			case status == http.StatusServiceUnavailable && strings.Contains(body, "database: failed"):
				r.down++
				r.wasDown, r.upSince = true, time.Time{}
			case status == http.StatusOK && r.wasDown && r.upSince.IsZero():
				r.upSince = time.Now()
			}
			r.mu.Unlock()
			select {
			case <-r.done:
				return
			case <-ctx.Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	return r
}

func (r *readiness) sawDown() bool { r.mu.Lock(); defer r.mu.Unlock(); return r.wasDown }

func (r *readiness) downCount() int { r.mu.Lock(); defer r.mu.Unlock(); return r.down }

// up reports /readyz answered ready after it had reported the database down.
func (r *readiness) up() bool { return !r.upAt().IsZero() }

func (r *readiness) upAt() time.Time { r.mu.Lock(); defer r.mu.Unlock(); return r.upSince }

func (r *readiness) stop() { close(r.done); <-r.stopped }

// requestRows is what the database holds of one quota request.
type requestRows struct {
	status, decidedBy                    string
	grants, requested, approved, granted int
}

func dbCounts(t *testing.T, dsn string, ids []int64) map[int64]requestRows {
	t.Helper()
	ctx, conn := dbConn(t, dsn)
	out := map[int64]requestRows{}
	for _, id := range ids {
		var r requestRows
		target := fmt.Sprintf("quota-request/%d", id)
		require.NoError(t, conn.QueryRow(ctx, `SELECT status, decided_by,
			(SELECT count(*) FROM quota_grants g WHERE g.request_id = q.id),
			(SELECT count(*) FROM audit_log a WHERE a.target = $2 AND a.action = 'quota.request'),
			(SELECT count(*) FROM audit_log a WHERE a.target = $2 AND a.action = 'quota.approve'),
			(SELECT count(*) FROM audit_log a WHERE a.target = $2 AND a.action = 'quota.grant')
			FROM quota_requests q WHERE q.id = $1`, id, target).
			Scan(&r.status, &r.decidedBy, &r.grants, &r.requested, &r.approved, &r.granted))
		out[id] = r
	}
	return out
}

// dbConn connects to the test's database for the rest of the test.
func dbConn(t *testing.T, dsn string) (context.Context, *pgx.Conn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return ctx, conn
}

// dbQuery scans the one row of sql into dest.
func dbQuery(t *testing.T, dsn, sql string, dest ...any) {
	t.Helper()
	ctx, conn := dbConn(t, dsn)
	require.NoError(t, conn.QueryRow(ctx, sql).Scan(dest...), sql)
}

func dbExec(t *testing.T, dsn, sql string, args ...any) {
	t.Helper()
	ctx, conn := dbConn(t, dsn)
	_, err := conn.Exec(ctx, sql, args...)
	require.NoError(t, err, sql)
}
