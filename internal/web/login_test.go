package web

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/internal/store"
)

func TestAnonymousVisitLogsInAndReturnsToRequestedPage(t *testing.T) {
	p := startPortal(t, portalOptions{})
	b := newBrowser(t)

	first := b.get(p.URL + "/profile?tab=tokens")
	require.Equal(t, http.StatusOK, first.Status)
	assert.Contains(t, first.Body, "/interaction/", "anonymous visit ends on the IdP's login form")

	assert.Nil(t, b.cookie(p.URL, auth.SessionCookieName), "no session before sign-in, so none can be fixed on the victim")
	require.NotNil(t, b.cookie(p.URL+"/auth/callback", "gantry_login"), "the login in progress lives in a short-lived encrypted cookie")

	got := b.signIn(first, "alice")
	require.Equal(t, http.StatusOK, got.Status)
	assert.Equal(t, "/profile", got.URL.Path)
	assert.Equal(t, "tokens", got.URL.Query().Get("tab"))
	assert.Equal(t, "alice", got.text("user-name"))
	assert.Equal(t, "researcher", got.text("user-role"))

	require.NotNil(t, b.cookie(p.URL, auth.SessionCookieName), "signed in with a session")
	assert.Nil(t, b.cookie(p.URL+"/auth/callback", "gantry_login"), "the login cookie is used once")

	entries, err := p.Store.AuditEntries(context.Background(), store.AuditFilter{Actor: "alice", Action: "login"})
	require.NoError(t, err)
	require.Len(t, entries, 1)
	assert.Equal(t, "browser", entries[0].Via)

	u, err := p.Store.UserByUsername(context.Background(), "alice")
	require.NoError(t, err)
	assert.Equal(t, store.StringList{"vision-researchers"}, u.Groups)
}

func TestSessionCookieAttributes(t *testing.T) {
	p := startPortal(t, portalOptions{})
	b := newBrowser(t)
	b.client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := b.client.Get(p.URL + "/auth/login?next=/profile")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusFound, resp.StatusCode)

	cookies := map[string]*http.Cookie{}
	for _, c := range resp.Cookies() {
		cookies[c.Name] = c
	}
	assert.NotContains(t, cookies, auth.SessionCookieName, "an anonymous visit to the login page starts no session")
	login := cookies["gantry_login"]
	require.NotNil(t, login, "the login in progress is kept in a cookie")
	assert.True(t, login.HttpOnly)
	assert.Equal(t, http.SameSiteLaxMode, login.SameSite)
	assert.False(t, login.Secure, "plain-HTTP public URL")
	assert.Equal(t, "/auth/callback", login.Path, "sent only to the callback")
	assert.LessOrEqual(t, login.MaxAge, 600, "short-lived")
	assert.NotContains(t, login.Value, "/profile", "encrypted")

	idp, err := url.Parse(resp.Header.Get("Location"))
	require.NoError(t, err)
	q := idp.Query()
	assert.Equal(t, "code", q.Get("response_type"))
	assert.Equal(t, "S256", q.Get("code_challenge_method"))
	assert.NotEmpty(t, q.Get("code_challenge"))
	assert.NotEmpty(t, q.Get("state"))
	assert.NotEmpty(t, q.Get("nonce"))
	assert.Equal(t, p.URL+"/auth/callback", q.Get("redirect_uri"))

	// The session cookie is set when the sign-in completes.
	signer := newBrowser(t)
	cb := signer.callbackURL(p.URL, "alice")
	signer.client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err = signer.client.Get(cb.String())
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusFound, resp.StatusCode)
	var session *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == auth.SessionCookieName {
			session = c
		}
	}
	require.NotNil(t, session)
	assert.True(t, session.HttpOnly)
	assert.Equal(t, http.SameSiteLaxMode, session.SameSite)
	assert.False(t, session.Secure, "plain-HTTP public URL")
	assert.Equal(t, "/", session.Path)
}

func TestRolesAndTeamsFromGroups(t *testing.T) {
	p := startPortal(t, portalOptions{})
	cases := map[string]struct {
		username  string
		wantRole  string
		wantTeams []string
		noTeam    bool
	}{
		"vision researcher": {username: "alice", wantRole: "researcher", wantTeams: []string{"vision"}},
		"vision lead":       {username: "bob", wantRole: "team lead", wantTeams: []string{"vision"}},
		"nlp researcher":    {username: "carol", wantRole: "researcher", wantTeams: []string{"nlp"}},
		"nlp lead":          {username: "dave", wantRole: "team lead", wantTeams: []string{"nlp"}},
		"admin":             {username: "erin", wantRole: "admin", wantTeams: []string{}},
		"in no team":        {username: "frank", wantRole: "researcher", wantTeams: []string{}, noTeam: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b := newBrowser(t)
			home := b.login(p.URL, "/", tc.username)
			require.Equal(t, http.StatusOK, home.Status, home.Body)
			assert.Equal(t, tc.username, home.text("user-name"))
			assert.Equal(t, tc.wantRole, home.text("user-role"))
			assert.Equal(t, tc.noTeam, home.has("no-team"), "the no-team page")
			for _, team := range tc.wantTeams {
				assert.True(t, home.has("team-"+team), "card for team %s", team)
			}

			status, me := b.me(p.URL, "")
			require.Equal(t, http.StatusOK, status)
			assert.Equal(t, tc.username, me.Username)
			assert.Equal(t, tc.wantRole, me.Role)
			assert.Equal(t, "browser", me.Via)
			var teams []string
			for _, tm := range me.Teams {
				teams = append(teams, tm.Name)
			}
			if teams == nil {
				teams = []string{}
			}
			assert.Equal(t, tc.wantTeams, teams)
		})
	}
}

func TestCallbackRefusals(t *testing.T) {
	p := startPortal(t, portalOptions{})
	cases := map[string]struct {
		callback   func(t *testing.T, b *browser) string
		wantStatus int
		wantWords  string
		// stillSignedIn: the replaying browser keeps the session of its first, successful use.
		stillSignedIn bool
	}{
		"replayed state": {
			callback: func(t *testing.T, b *browser) string {
				cb := b.callbackURL(p.URL, "alice")
				first := b.get(cb.String())
				require.Equal(t, "alice", first.text("user-name"), "first use signs in")
				return cb.String()
			},
			wantStatus:    http.StatusBadRequest,
			wantWords:     "already used",
			stillSignedIn: true,
		},
		"tampered state": {
			callback: func(t *testing.T, b *browser) string {
				cb := b.callbackURL(p.URL, "alice")
				q := cb.Query()
				q.Set("state", q.Get("state")+"x")
				cb.RawQuery = q.Encode()
				return cb.String()
			},
			wantStatus: http.StatusBadRequest,
			wantWords:  "state check failed",
		},
		"callback from another browser": {
			callback: func(t *testing.T, _ *browser) string {
				return newBrowser(t).callbackURL(p.URL, "alice").String()
			},
			wantStatus: http.StatusBadRequest,
			wantWords:  "not expected by this browser session",
		},
		"IdP error": {
			callback: func(t *testing.T, b *browser) string {
				cb := b.callbackURL(p.URL, "alice")
				return p.URL + "/auth/callback?error=access_denied&state=" + url.QueryEscape(cb.Query().Get("state"))
			},
			wantStatus: http.StatusForbidden,
			wantWords:  "refused the sign-in",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b := newBrowser(t)
			got := b.get(tc.callback(t, b))
			assert.Equal(t, tc.wantStatus, got.Status)
			require.True(t, got.has("error-page"), got.Body)
			assert.Contains(t, got.text("error-message"), tc.wantWords)
			assert.Equal(t, tc.stillSignedIn, got.has("user-name"), "signed in")
		})
	}
	failed, err := p.Store.AuditEntries(context.Background(), store.AuditFilter{Action: "login.failed"})
	require.NoError(t, err)
	assert.Len(t, failed, len(cases), "each refusal is audited")
}

func TestCallbackRefusesExpiredIDToken(t *testing.T) {
	// The portal's clock runs two hours ahead: the IdP's one-hour ID tokens are expired on arrival.
	p := startPortal(t, portalOptions{now: func() time.Time { return time.Now().Add(2 * time.Hour) }})
	b := newBrowser(t)
	got := b.login(p.URL, "/", "alice")
	assert.Equal(t, http.StatusBadRequest, got.Status)
	require.True(t, got.has("error-page"), got.Body)
	assert.Contains(t, got.text("error-message"), "ID token has expired")
	assert.False(t, got.has("user-name"))
}

func TestLogoutEndsSessionHereAndAtIdP(t *testing.T) {
	p := startPortal(t, portalOptions{})
	b := newBrowser(t)
	home := b.login(p.URL, "/", "bob")
	require.Equal(t, "bob", home.text("user-name"))

	b.client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := b.client.PostForm(p.URL+"/auth/logout", url.Values{"gorilla.csrf.Token": {home.csrf()}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	target, err := url.Parse(resp.Header.Get("Location"))
	require.NoError(t, err)
	assert.Equal(t, "/session/end", target.Path)
	assert.NotEmpty(t, target.Query().Get("id_token_hint"))
	assert.Equal(t, p.URL+"/", target.Query().Get("post_logout_redirect_uri"))
	assert.Equal(t, clientID, target.Query().Get("client_id"))

	status, _ := b.me(p.URL, "")
	assert.Equal(t, http.StatusUnauthorized, status, "session ended")

	entries, err := p.Store.AuditEntries(context.Background(), store.AuditFilter{Actor: "bob", Action: "logout"})
	require.NoError(t, err)
	assert.Len(t, entries, 1)
}

func TestLoginRefusesOpenRedirect(t *testing.T) {
	p := startPortal(t, portalOptions{})
	b := newBrowser(t)
	got := b.signIn(b.get(p.URL+"/auth/login?next="+url.QueryEscape("//evil.example.com/x")), "alice")
	require.Equal(t, http.StatusOK, got.Status)
	assert.Equal(t, p.URL+"/", got.URL.String())
}
