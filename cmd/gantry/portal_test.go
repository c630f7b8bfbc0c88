package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/require"

	"github.com/gantry-dev/gantry/internal/config"
	"github.com/gantry-dev/gantry/internal/devcluster/stacktest"
)

// testPortal is the real portal wiring (run) in this process against the
// local stack, with a fresh database.
type testPortal struct {
	URL string
	DSN string
	Env *stacktest.Env
}

// startTestPortal runs the portal until the test ends; args add flags.
func startTestPortal(t *testing.T, args ...string) *testPortal {
	t.Helper()
	env := stacktest.Stack(t)
	addr := freeAddr(t)
	p := &testPortal{URL: "http://" + addr, DSN: stacktest.Postgres(t), Env: env}
	cfg, err := config.Load(append([]string{
		"--listen", addr,
		"--oidc-issuer", env.IssuerURL,
		"--oidc-client-id", "gantry",
		"--oidc-client-secret", "gantry-dev-secret",
		"--database-url", p.DSN,
		"--kubeconfig", env.Kubeconfig,
		"--prometheus-url", env.PrometheusURL,
		"--seed-teams", repoFile(t, "deploy/local/teams.yaml"),
		// Admin saves of the allowlist write this test's own ConfigMap.
		"--system-namespace", env.Namespace(t, "gantry-system", nil),
	}, args...), func(string) string { return "" })
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil))) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("portal stopped with: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("portal did not shut down")
		}
	})
	require.Eventually(t, func() bool {
		select {
		case err := <-done:
			done <- err
			t.Fatalf("portal exited during start-up: %v", err)
		default:
		}
		resp, err := http.Get(p.URL + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 90*time.Second, 200*time.Millisecond, "portal starts")
	return p
}

// user is a person's browser: a cookie jar signed in at the portal.
type user struct {
	t      *testing.T
	name   string
	client *http.Client
	base   string
	// bearer, when set, is sent as "Authorization: Bearer" on every request.
	bearer string
}

// signIn signs name in through the dev IdP's login form; "" stays anonymous.
func (p *testPortal) signIn(t *testing.T, name string) *user {
	t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	u := &user{t: t, name: name, base: p.URL, client: &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	if name == "" {
		return u
	}
	follow := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	resp, err := follow.Get(p.URL + "/profile")
	require.NoError(t, err)
	form, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := loginAction.FindStringSubmatch(string(form))
	require.NotNil(t, m, "IdP login form expected:\n%s", form)
	action := resp.Request.URL.ResolveReference(&url.URL{Path: m[1]})
	resp, err = follow.PostForm(action.String(), url.Values{"login": {name}, "password": {"gantry-dev"}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s signs in", name)
	require.Equal(t, "/profile", resp.Request.URL.Path, "%s signs in", name)
	return u
}

// csrf is a CSRF token for the user's session, read from their profile page.
func (u *user) csrf() string {
	u.t.Helper()
	resp, err := u.client.Get(u.base + "/profile")
	require.NoError(u.t, err)
	defer resp.Body.Close()
	doc, err := goquery.NewDocumentFromReader(resp.Body)
	require.NoError(u.t, err)
	v, _ := doc.Find(`input[name="gorilla.csrf.Token"]`).First().Attr("value")
	return v
}

// do sends a request as the user without following redirects. A body of
// form values is sent as a form, with the CSRF token; a string as JSON,
// with the token in the header.
func (u *user) do(method, path string, body any, token string) (int, string) {
	u.t.Helper()
	status, out, _ := u.send(method, path, body, token)
	return status, out
}

// status sends a request without a body and returns the answer's status
// and redirect target as soon as they arrive, without reading the body (a
// followed log streams for as long as the client stays).
func (u *user) status(method, path string) (int, string) {
	u.t.Helper()
	req, err := http.NewRequest(method, u.base+path, nil)
	require.NoError(u.t, err)
	if u.bearer != "" {
		req.Header.Set("Authorization", "Bearer "+u.bearer)
	}
	resp, err := u.client.Do(req)
	require.NoError(u.t, err)
	_ = resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Location")
}

// call is do for an answer's status and redirect target.
func (u *user) call(method, path string, body any, token string) (int, string) {
	u.t.Helper()
	status, _, location := u.send(method, path, body, token)
	return status, location
}

func (u *user) send(method, path string, body any, token string) (int, string, string) {
	u.t.Helper()
	var rd io.Reader
	var ctype string
	switch b := body.(type) {
	case url.Values:
		if token != "" {
			b.Set("gorilla.csrf.Token", token)
		}
		rd, ctype = strings.NewReader(b.Encode()), "application/x-www-form-urlencoded"
	case string:
		rd, ctype = strings.NewReader(b), "application/json"
	}
	req, err := http.NewRequest(method, u.base+path, rd)
	require.NoError(u.t, err)
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if token != "" {
		req.Header.Set("X-CSRF-Token", token)
	}
	if u.bearer != "" {
		req.Header.Set("Authorization", "Bearer "+u.bearer)
	}
	resp, err := u.client.Do(req)
	require.NoError(u.t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(u.t, err)
	return resp.StatusCode, string(out), resp.Header.Get("Location")
}
