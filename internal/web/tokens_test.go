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
	"github.com/gantry-dev/gantry/internal/store"
)

func TestAPITokenLifecycle(t *testing.T) {
	ctx := context.Background()
	p := startPortal(t, portalOptions{})
	b := newBrowser(t)
	profile := b.login(p.URL, "/profile", "bob")
	require.Equal(t, "bob", profile.text("user-name"))
	assert.True(t, profile.has("no-tokens"))

	created := b.post(p.URL+"/profile/tokens", url.Values{
		"gorilla.csrf.Token": {profile.csrf()},
		"name":               {"ci pipeline"},
		"expires_in_days":    {"30"},
	})
	require.Equal(t, http.StatusOK, created.Status, created.Body)
	assert.Equal(t, "/profile", created.URL.Path, "post/redirect/get")
	secret, _ := created.Doc.Find(`[data-testid="new-token"]`).Attr("value")
	require.True(t, strings.HasPrefix(secret, auth.TokenPrefix), "token shown once: %q", secret)
	assert.Contains(t, created.text("flash"), "ci pipeline")

	again := b.get(p.URL + "/profile")
	assert.False(t, again.has("new-token"), "the secret is never shown twice")

	stored, err := p.Store.APITokens(ctx, accountOf(t, p, "bob").ID)
	require.NoError(t, err)
	require.Len(t, stored, 1)
	assert.Equal(t, auth.HashToken(secret), stored[0].Hash, "only the hash is stored")
	assert.NotContains(t, string(stored[0].Hash), secret)
	assert.True(t, strings.HasPrefix(secret, stored[0].Prefix))
	assert.WithinDuration(t, time.Now().Add(30*24*time.Hour), stored[0].ExpiresAt, time.Minute)

	// The bearer identity equals the browser identity, only the channel differs.
	status, viaSession := b.me(p.URL, "")
	require.Equal(t, http.StatusOK, status)
	status, viaToken := b.me(p.URL, secret)
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, "token:"+itoa(stored[0].ID), viaToken.Via)
	viaToken.Via = viaSession.Via
	assert.Equal(t, viaSession, viaToken)
	assert.Equal(t, "team lead", viaToken.Role)

	// The use is written once the call has its answer.
	assert.Eventually(t, func() bool {
		used, err := p.Store.APITokenByHash(ctx, auth.HashToken(secret))
		return err == nil && used.LastUsedAt != nil
	}, 5*time.Second, 10*time.Millisecond, "use is recorded")

	revoked := b.post(p.URL+"/profile/tokens/"+itoa(stored[0].ID)+"/revoke", url.Values{"gorilla.csrf.Token": {again.csrf()}})
	require.Equal(t, http.StatusOK, revoked.Status, revoked.Body)
	assert.Contains(t, revoked.text("flash"), "revoked")
	status, _ = b.me(p.URL, secret)
	assert.Equal(t, http.StatusUnauthorized, status, "revoked token refused")

	audit, err := p.Store.AuditEntries(ctx, store.AuditFilter{Actor: "bob"})
	require.NoError(t, err)
	var actions []string
	for _, e := range audit {
		actions = append(actions, e.Action)
	}
	assert.Equal(t, []string{"token.revoke", "token.create", "login"}, actions)
}

func TestBearerTokenRefusals(t *testing.T) {
	ctx := context.Background()
	p := startPortal(t, portalOptions{})
	carol, err := p.Store.RecordLogin(ctx, store.User{Issuer: "https://idp.example.com", Subject: "sub-carol", Username: "carol", Groups: store.StringList{"nlp-researchers"}, LastLoginAt: time.Now()})
	require.NoError(t, err)

	mint := func(t *testing.T, expires time.Time) string {
		tok, err := auth.GenerateToken()
		require.NoError(t, err)
		_, err = p.Store.CreateAPIToken(ctx, store.APIToken{UserID: carol.ID, Username: "carol", Name: "t", Hash: tok.Hash, Prefix: tok.Prefix, ExpiresAt: expires})
		require.NoError(t, err)
		return tok.Secret
	}
	valid := mint(t, time.Now().Add(time.Hour))
	cases := map[string]struct {
		header     string
		wantStatus int
	}{
		"valid":        {header: "Bearer " + valid, wantStatus: http.StatusOK},
		"expired":      {header: "Bearer " + mint(t, time.Now().Add(-time.Minute)), wantStatus: http.StatusUnauthorized},
		"unknown":      {header: "Bearer gty_" + strings.Repeat("A", 43), wantStatus: http.StatusUnauthorized},
		"garbage":      {header: "Bearer nope", wantStatus: http.StatusUnauthorized},
		"wrong scheme": {header: "Basic " + valid, wantStatus: http.StatusUnauthorized},
		"none":         {wantStatus: http.StatusUnauthorized},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodGet, p.URL+"/api/v1/me", nil)
			require.NoError(t, err)
			if tc.header != "" {
				req.Header.Set("Authorization", tc.header)
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, tc.wantStatus, resp.StatusCode)
			if tc.wantStatus == http.StatusUnauthorized {
				assert.Contains(t, resp.Header.Get("WWW-Authenticate"), "Bearer")
			}
		})
	}

	t.Run("groups changed at the IdP take effect at next login", func(t *testing.T) {
		_, err := p.Store.RecordLogin(ctx, store.User{Issuer: "https://idp.example.com", Subject: "sub-carol", Username: "carol", Groups: store.StringList{"nlp-leads"}, LastLoginAt: time.Now()})
		require.NoError(t, err)
		status, me := newBrowser(t).me(p.URL, valid)
		require.Equal(t, http.StatusOK, status)
		assert.Equal(t, "team lead", me.Role)
	})
}

func TestTokenFormValidation(t *testing.T) {
	p := startPortal(t, portalOptions{})
	b := newBrowser(t)
	profile := b.login(p.URL, "/profile", "alice")
	cases := map[string]struct {
		name, days string
		wantField  string
	}{
		"no name":       {days: "30", wantField: "error-name"},
		"zero days":     {name: "x", days: "0", wantField: "error-expires_in_days"},
		"too many days": {name: "x", days: "366", wantField: "error-expires_in_days"},
		"91 days":       {name: "x", days: "91", wantField: "error-expires_in_days"},
		"not a number":  {name: "x", days: "soon", wantField: "error-expires_in_days"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := b.post(p.URL+"/profile/tokens", url.Values{"gorilla.csrf.Token": {profile.csrf()}, "name": {tc.name}, "expires_in_days": {tc.days}})
			assert.Equal(t, http.StatusUnprocessableEntity, got.Status)
			assert.NotEmpty(t, got.text(tc.wantField), got.Body)
		})
	}
	t.Run("revoking someone else's token", func(t *testing.T) {
		got := b.post(p.URL+"/profile/tokens/999999/revoke", url.Values{"gorilla.csrf.Token": {profile.csrf()}})
		assert.Equal(t, http.StatusNotFound, got.Status)
		assert.True(t, got.has("error-page"))
	})
}

// accountOf is the account of the only person who signed in as username.
func accountOf(t *testing.T, p *portal, username string) store.User {
	t.Helper()
	us, err := p.Store.UsersByUsername(context.Background(), username)
	require.NoError(t, err)
	require.Len(t, us, 1, "accounts named %s", username)
	return us[0]
}
