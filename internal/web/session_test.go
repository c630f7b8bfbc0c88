package web

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gantry-dev/gantry/internal/auth"
)

func TestForgedAndExpiredSessionsRefused(t *testing.T) {
	p := startPortal(t, portalOptions{})
	cases := map[string]struct {
		session func(t *testing.T) *http.Cookie
	}{
		"forged cookie": {session: func(t *testing.T) *http.Cookie {
			return &http.Cookie{Name: auth.SessionCookieName, Value: "bm90LWEtcmVhbC1zZXNzaW9uLXRva2VuLWF0LWFsbA"}
		}},
		"expired session": {session: func(t *testing.T) *http.Cookie {
			b := newBrowser(t)
			require.Equal(t, "alice", b.login(p.URL, "/", "alice").text("user-name"))
			c := b.cookie(p.URL, auth.SessionCookieName)
			_, err := p.Store.SQL().ExecContext(context.Background(), `UPDATE sessions SET expiry = now() - interval '1 second' WHERE token = $1`, c.Value)
			require.NoError(t, err)
			return c
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cookie := tc.session(t)
			client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

			req, err := http.NewRequest(http.MethodGet, p.URL+"/profile", nil)
			require.NoError(t, err)
			req.AddCookie(cookie)
			resp, err := client.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, http.StatusFound, resp.StatusCode)
			assert.Equal(t, "/auth/login?next="+url.QueryEscape("/profile"), resp.Header.Get("Location"))

			req, err = http.NewRequest(http.MethodGet, p.URL+"/api/v1/me", nil)
			require.NoError(t, err)
			req.AddCookie(cookie)
			resp, err = client.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
		})
	}
}

func TestPostWithoutCSRFTokenRefused(t *testing.T) {
	p := startPortal(t, portalOptions{})
	b := newBrowser(t)
	profile := b.login(p.URL, "/profile", "alice")
	require.Equal(t, "alice", profile.text("user-name"))
	token := profile.csrf()
	require.NotEmpty(t, token)

	cases := map[string]struct {
		path string
		form url.Values
	}{
		"create token without CSRF token": {path: "/profile/tokens", form: url.Values{"name": {"ci"}, "expires_in_days": {"30"}}},
		"create token with a wrong token": {path: "/profile/tokens", form: url.Values{"name": {"ci"}, "expires_in_days": {"30"}, "gorilla.csrf.Token": {"d3Jvbmc"}}},
		"logout without CSRF token":       {path: "/auth/logout"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := b.post(p.URL+tc.path, tc.form)
			assert.Equal(t, http.StatusForbidden, got.Status)
			require.True(t, got.has("error-page"), got.Body)
			assert.Contains(t, got.text("error-message"), "security token")
		})
	}
	status, me := b.me(p.URL, "")
	require.Equal(t, http.StatusOK, status, "still signed in")
	assert.Equal(t, "alice", me.Username)
	tokens, err := p.Store.APITokens(context.Background(), accountOf(t, p, "alice").ID)
	require.NoError(t, err)
	assert.Empty(t, tokens, "nothing was created")

	t.Run("cross-origin POST with a valid token", func(t *testing.T) {
		form := url.Values{"name": {"x"}, "expires_in_days": {"1"}, "gorilla.csrf.Token": {token}}
		req, err := http.NewRequest(http.MethodPost, p.URL+"/profile/tokens", strings.NewReader(form.Encode()))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", "http://evil.example.com")
		got := b.do(req)
		assert.Equal(t, http.StatusForbidden, got.Status)
	})
}

func TestIdleSessionTimesOut(t *testing.T) {
	p := startPortal(t, portalOptions{idleTimeout: time.Second})
	b := newBrowser(t)
	require.Equal(t, "alice", b.login(p.URL, "/", "alice").text("user-name"))
	status, _ := b.me(p.URL, "")
	require.Equal(t, http.StatusOK, status, "active session")
	time.Sleep(1500 * time.Millisecond)
	status, _ = b.me(p.URL, "")
	assert.Equal(t, http.StatusUnauthorized, status, "idle session ended")
}
