package web

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/gantry-dev/gantry/internal/audit"
	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/internal/devcluster/stacktest"
	"github.com/gantry-dev/gantry/internal/launch"
	"github.com/gantry-dev/gantry/internal/roster"
	"github.com/gantry-dev/gantry/internal/store"
	"github.com/gantry-dev/gantry/static"
)

const (
	clientID     = "gantry"
	clientSecret = "gantry-dev-secret"
	devPassword  = "gantry-dev"
)

// testTeams mirrors deploy/local/teams.yaml's group mapping.
const testTeams = `
cohort: gantry
teams:
  - name: vision
    displayName: Computer Vision
    costCenter: CC-1001
    memberGroups: [vision-researchers]
    leadGroups: [vision-leads]
  - name: nlp
    displayName: Language
    costCenter: CC-1002
    memberGroups: [nlp-researchers]
    leadGroups: [nlp-leads]
  - name: platform
    displayName: Platform
    costCenter: CC-1003
    memberGroups: [platform-researchers]
    leadGroups: [platform-leads]
`

func init() { gin.SetMode(gin.TestMode) }

// portal is a Gantry HTTP server on a free loopback port, backed by a fresh
// database and the real dev IdP.
type portal struct {
	URL   string
	DSN   string
	Store *store.Store
	srv   *httptest.Server
	// ProbeURL serves /healthz, /readyz and /metrics when the options ask
	// for a separate probe port; else it is empty.
	ProbeURL string
}

type portalOptions struct {
	now            func() time.Time
	idleTimeout    time.Duration
	ready          func(p *portal) []ReadinessCheck
	trustedProxies []string
	separateProbes bool
	// issuer is the IdP to sign in at; empty means the shared dev IdP.
	issuer string
	// jobRoutes mounts the job routes with launch services that are never
	// reached (tests of what middleware refuses before a handler runs).
	jobRoutes bool
}

func testLog(t *testing.T) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func startPortal(t *testing.T, opts portalOptions) *portal {
	t.Helper()
	ctx := context.Background()
	issuer := opts.issuer
	if issuer == "" {
		issuer = stacktest.IdP(t)
	}
	dsn := stacktest.Postgres(t)
	log := testLog(t)

	db, err := store.Open(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	require.NoError(t, store.Migrate(ctx, db.SQL(), log))
	teams, err := roster.Parse([]byte(testTeams))
	require.NoError(t, err)
	require.NoError(t, db.UpsertTeams(ctx, teams.Records()))

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(nil)
	_ = srv.Listener.Close()
	srv.Listener = ln
	p := &portal{URL: "http://" + ln.Addr().String(), DSN: dsn, Store: db, srv: srv}
	publicURL, err := url.Parse(p.URL)
	require.NoError(t, err)

	rp, err := auth.NewOIDC(ctx, auth.OIDCOptions{
		Issuer:                issuer,
		ClientID:              clientID,
		ClientSecret:          clientSecret,
		Scopes:                []string{"openid", "profile", "email", "groups"},
		GroupsClaim:           "groups",
		RedirectURL:           p.URL + "/auth/callback",
		PostLogoutRedirectURL: p.URL + "/",
		Now:                   opts.now,
	})
	require.NoError(t, err)
	idle := opts.idleTimeout
	if idle == 0 {
		idle = 30 * time.Minute
	}
	sessions := auth.NewSessionManager(db.SQL(), auth.SessionOptions{IdleTimeout: idle, Lifetime: 12 * time.Hour})
	ready := []ReadinessCheck{{Name: "database", Check: db.Ping}}
	if opts.ready != nil {
		ready = opts.ready(p)
	}
	var launcher Launcher
	var jobs JobReader
	if opts.jobRoutes {
		launcher, jobs = &launch.Service{}, launch.Reader{}
	}
	h, probes, err := NewHandlers(Deps{
		Launcher:  launcher,
		Jobs:      jobs,
		PublicURL: publicURL,
		Issuer:    issuer,
		CSRFKey:   auth.DeriveKey(clientSecret, "csrf"),
		Store:     db,
		Sessions:  sessions,
		Login:     rp,
		Auth: &auth.Authenticator{
			Sessions: sessions,
			Store:    db,
			Resolver: auth.Resolver{Teams: db, AdminGroups: []string{"gantry-admins"}},
			Log:      log,
		},
		Audit:          audit.New(db, nil),
		Ready:          ready,
		Static:         static.FS,
		Registry:       prometheus.NewRegistry(),
		Log:            log,
		ReadyTimeout:   time.Second,
		TrustedProxies: opts.trustedProxies,
		SeparateProbes: opts.separateProbes,
	})
	require.NoError(t, err)
	srv.Config.Handler = h
	srv.Start()
	t.Cleanup(srv.Close)
	if probes != nil {
		probeSrv := httptest.NewServer(probes)
		t.Cleanup(probeSrv.Close)
		p.ProbeURL = probeSrv.URL
	}
	return p
}

// browser is a cookie-keeping HTTP client that follows redirects, except
// into the portal's callback when stopAtCallback is set.
type browser struct {
	t              *testing.T
	client         *http.Client
	stopAtCallback bool
	callback       *url.URL
}

func newBrowser(t *testing.T) *browser {
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	b := &browser{t: t}
	b.client = &http.Client{Jar: jar, Timeout: 20 * time.Second}
	b.client.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) > 15 {
			return fmt.Errorf("too many redirects")
		}
		if b.stopAtCallback && req.URL.Path == "/auth/callback" {
			b.callback = req.URL
			return http.ErrUseLastResponse
		}
		return nil
	}
	return b
}

type page struct {
	Status int
	URL    *url.URL
	Header http.Header
	Body   string
	Doc    *goquery.Document
}

// text returns the trimmed text of the element with the data-testid.
func (p page) text(testid string) string {
	return strings.TrimSpace(p.Doc.Find(`[data-testid="` + testid + `"]`).First().Text())
}

func (p page) has(testid string) bool {
	return p.Doc.Find(`[data-testid="`+testid+`"]`).Length() > 0
}

// csrf returns the CSRF token of the page's forms.
func (p page) csrf() string {
	v, _ := p.Doc.Find(`input[name="gorilla.csrf.Token"]`).First().Attr("value")
	return v
}

func (b *browser) do(req *http.Request) page {
	b.t.Helper()
	resp, err := b.client.Do(req)
	require.NoError(b.t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(b.t, err)
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(string(body)))
	require.NoError(b.t, err)
	return page{Status: resp.StatusCode, URL: resp.Request.URL, Header: resp.Header, Body: string(body), Doc: doc}
}

func (b *browser) get(rawURL string) page {
	b.t.Helper()
	req, err := http.NewRequest(http.MethodGet, rawURL, nil)
	require.NoError(b.t, err)
	return b.do(req)
}

func (b *browser) post(rawURL string, form url.Values) page {
	b.t.Helper()
	req, err := http.NewRequest(http.MethodPost, rawURL, strings.NewReader(form.Encode()))
	require.NoError(b.t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return b.do(req)
}

var loginAction = regexp.MustCompile(`action="(/interaction/[^"]+/login)"`)

// signIn fills in the IdP's login form on p (which must be that form).
func (b *browser) signIn(p page, username string) page {
	b.t.Helper()
	m := loginAction.FindStringSubmatch(p.Body)
	require.NotNil(b.t, m, "expected the IdP login form at %s, got %d:\n%s", p.URL, p.Status, p.Body)
	action := p.URL.ResolveReference(&url.URL{Path: m[1]})
	return b.post(action.String(), url.Values{"login": {username}, "password": {devPassword}})
}

// login visits path anonymously and signs in at the IdP as username.
func (b *browser) login(portalURL, path, username string) page {
	b.t.Helper()
	return b.signIn(b.get(portalURL+path), username)
}

// callbackURL runs a login up to the moment the IdP sends the browser back
// to the portal, and returns that callback URL without visiting it.
func (b *browser) callbackURL(portalURL, username string) *url.URL {
	b.t.Helper()
	b.stopAtCallback = true
	defer func() { b.stopAtCallback = false }()
	b.callback = nil
	b.login(portalURL, "/", username)
	require.NotNil(b.t, b.callback, "the IdP did not redirect to the callback")
	return b.callback
}

func (b *browser) cookie(portalURL, name string) *http.Cookie {
	u, _ := url.Parse(portalURL)
	for _, c := range b.client.Jar.Cookies(u) {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// me calls /api/v1/me with the browser's session, or with a bearer token.
func (b *browser) me(portalURL, token string) (int, meResponse) {
	b.t.Helper()
	req, err := http.NewRequest(http.MethodGet, portalURL+"/api/v1/me", nil)
	require.NoError(b.t, err)
	client := b.client
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
		client = &http.Client{Timeout: 10 * time.Second} // no cookies at all
	}
	resp, err := client.Do(req)
	require.NoError(b.t, err)
	defer resp.Body.Close()
	var me meResponse
	if resp.StatusCode == http.StatusOK {
		require.NoError(b.t, json.NewDecoder(resp.Body).Decode(&me))
	}
	return resp.StatusCode, me
}
