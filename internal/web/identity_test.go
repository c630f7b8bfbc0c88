package web

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/internal/devcluster/stacktest"
	"github.com/gantry-dev/gantry/internal/store"
)

func TestLoginRefusesSystemUsernamesAndGroups(t *testing.T) {
	p := startPortal(t, portalOptions{issuer: stacktest.FreshIdP(t)})
	cases := map[string]struct {
		login     string
		wantWords []string
	}{
		"system: username": {login: "system:kube-controller-manager",
			wantWords: []string{`username "system:kube-controller-manager"`, "Kubernetes reserves for its own components"}},
		"system: group": {login: "oscar",
			wantWords: []string{`group "system:masters"`, "Kubernetes reserves for its own components"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b := newBrowser(t)
			got := b.login(p.URL, "/", tc.login)
			assert.Equal(t, http.StatusForbidden, got.Status)
			require.True(t, got.has("error-page"), got.Body)
			assert.Equal(t, "Sign-in was refused", strings.TrimSpace(got.Doc.Find(`[data-testid="error-page"] h1`).Text()))
			for _, w := range tc.wantWords {
				assert.Contains(t, got.text("error-message"), w)
			}
			assert.False(t, got.has("user-name"), "not signed in")
			status, _ := b.me(p.URL, "")
			assert.Equal(t, http.StatusUnauthorized, status, "no session")
		})
	}
	var accounts int
	require.NoError(t, p.Store.SQL().QueryRow(`SELECT count(*) FROM users`).Scan(&accounts))
	assert.Zero(t, accounts, "a refused login leaves no account")
	failed, err := p.Store.AuditEntries(context.Background(), store.AuditFilter{Action: "login.failed"})
	require.NoError(t, err)
	assert.Len(t, failed, len(cases), "each refusal is audited")
}

func TestSameUsernameDifferentSubjectsStayTwoPeople(t *testing.T) {
	p := startPortal(t, portalOptions{issuer: stacktest.FreshIdP(t)})
	vision, nlp := newBrowser(t), newBrowser(t)
	require.Equal(t, "sam", vision.login(p.URL, "/", "sam-vision").text("user-name"))
	require.Equal(t, "sam", nlp.login(p.URL, "/", "sam-nlp").text("user-name"))

	_, visionMe := vision.me(p.URL, "")
	_, nlpMe := nlp.me(p.URL, "")
	assert.Equal(t, "Sam Vision", visionMe.Name)
	assert.Equal(t, []string{"vision-researchers"}, visionMe.Groups)
	require.Len(t, visionMe.Teams, 1)
	assert.Equal(t, "vision", visionMe.Teams[0].Name)
	assert.Equal(t, "Sam Language", nlpMe.Name, "the second sam's login did not take over the first's account")
	require.Len(t, nlpMe.Teams, 1)
	assert.Equal(t, "nlp", nlpMe.Teams[0].Name)

	// The first sam signs in again: still their own account, not the second's.
	again := newBrowser(t)
	require.Equal(t, "sam", again.login(p.URL, "/", "sam-vision").text("user-name"))
	_, againMe := again.me(p.URL, "")
	assert.Equal(t, "vision", againMe.Teams[0].Name)

	accounts, err := p.Store.UsersByUsername(context.Background(), "sam")
	require.NoError(t, err)
	require.Len(t, accounts, 2, "two people named sam, two accounts")
	assert.NotEqual(t, accounts[0].Subject, accounts[1].Subject)
}

// createToken makes a token through the profile form and returns its secret.
func createToken(t *testing.T, p *portal, b *browser, name string, readOnly bool) string {
	t.Helper()
	profile := b.get(p.URL + "/profile")
	form := url.Values{"gorilla.csrf.Token": {profile.csrf()}, "name": {name}, "expires_in_days": {"30"}}
	if readOnly {
		form.Set("read_only", "true")
	}
	created := b.post(p.URL+"/profile/tokens", form)
	require.Equal(t, http.StatusOK, created.Status, created.Body)
	secret, _ := created.Doc.Find(`[data-testid="new-token"]`).Attr("value")
	require.True(t, strings.HasPrefix(secret, auth.TokenPrefix), "token shown once: %q", secret)
	return secret
}

// apiError is the API's JSON error shape.
type apiError struct {
	Error   string `json:"error"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

func callAPI(t *testing.T, method, rawURL, token, body string) (int, apiError) {
	t.Helper()
	req, err := http.NewRequest(method, rawURL, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var e apiError
	if resp.StatusCode >= 400 {
		require.NoError(t, json.Unmarshal(raw, &e), "JSON error shape: %s", raw)
	}
	return resp.StatusCode, e
}

func TestTokenStopsWhenItsOwnerLeavesTheirTeamOrStopsSigningIn(t *testing.T) {
	ctx := context.Background()
	p := startPortal(t, portalOptions{})
	b := newBrowser(t)
	require.Equal(t, "carol", b.login(p.URL, "/", "carol").text("user-name"))
	secret := createToken(t, p, b, "nightly", false)
	status, me := b.me(p.URL, secret)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "nlp", me.Teams[0].Name)

	t.Run("removed from the team", func(t *testing.T) {
		nlp, err := p.Store.TeamByName(ctx, "nlp")
		require.NoError(t, err)
		nlp.MemberGroups = store.StringList{"nlp-new-members"}
		_, err = p.Store.SaveTeam(ctx, nlp)
		require.NoError(t, err)
		t.Cleanup(func() {
			nlp.MemberGroups = store.StringList{"nlp-researchers"}
			_, _ = p.Store.SaveTeam(ctx, nlp)
		})

		status, e := callAPI(t, http.MethodGet, p.URL+"/api/v1/me", secret, "")
		assert.Equal(t, http.StatusUnauthorized, status, "a token of someone in no team stops working")
		assert.Equal(t, "unauthenticated", e.Code)
		assert.Contains(t, e.Message, "no team and no admin group")
	})

	t.Run("back in the team", func(t *testing.T) {
		status, _ := b.me(p.URL, secret)
		assert.Equal(t, http.StatusOK, status)
	})

	t.Run("not signed in for 31 days", func(t *testing.T) {
		_, err := p.Store.SQL().ExecContext(ctx, `UPDATE users SET last_login_at = now() - interval '31 days' WHERE username = 'carol'`)
		require.NoError(t, err)
		status, e := callAPI(t, http.MethodGet, p.URL+"/api/v1/me", secret, "")
		assert.Equal(t, http.StatusUnauthorized, status)
		assert.Contains(t, e.Message, "has not signed in for 31 days (the limit is 30 days)")
		assert.Contains(t, e.Message, "Sign in to the portal once")

		require.Equal(t, "carol", newBrowser(t).login(p.URL, "/", "carol").text("user-name"))
		status, _ = b.me(p.URL, secret)
		assert.Equal(t, http.StatusOK, status, "signing in wakes the token")
	})
}

func TestReadOnlyTokenCannotChangeAnything(t *testing.T) {
	p := startPortal(t, portalOptions{jobRoutes: true})
	b := newBrowser(t)
	require.Equal(t, "alice", b.login(p.URL, "/", "alice").text("user-name"))
	readOnly := createToken(t, p, b, "dashboard", true)
	readWrite := createToken(t, p, b, "ci", false)

	profile := b.get(p.URL + "/profile")
	var access []string
	profile.Doc.Find(`[data-testid^="access-"]`).Each(func(_ int, s *goquery.Selection) { access = append(access, strings.TrimSpace(s.Text())) })
	assert.ElementsMatch(t, []string{"read-only", "read and write"}, access, "the profile says which token may only read")

	status, _ := b.me(p.URL, readOnly)
	assert.Equal(t, http.StatusOK, status, "a read-only token reads")

	for _, method := range []string{http.MethodPost, http.MethodDelete} {
		path := p.URL + "/api/v1/teams/vision/jobs"
		if method == http.MethodDelete {
			path += "/some-job"
		}
		status, e := callAPI(t, method, path, readOnly, "not json")
		assert.Equal(t, http.StatusForbidden, status, "%s with a read-only token", method)
		assert.Equal(t, "forbidden", e.Code)
		assert.Equal(t, "Read-only token", e.Error)
		assert.Contains(t, e.Message, "read-only")
	}
	status, e := callAPI(t, http.MethodPost, p.URL+"/api/v1/teams/vision/jobs", readWrite, "not json")
	assert.Equal(t, http.StatusBadRequest, status, "the same call with a read-write token reaches the handler")
	assert.Equal(t, "bad_request", e.Code)
}

func TestTokenLifeIsAtMost90Days(t *testing.T) {
	p := startPortal(t, portalOptions{})
	b := newBrowser(t)
	profile := b.login(p.URL, "/profile", "alice")
	got := b.post(p.URL+"/profile/tokens", url.Values{"gorilla.csrf.Token": {profile.csrf()}, "name": {"x"}, "expires_in_days": {"91"}})
	assert.Equal(t, http.StatusUnprocessableEntity, got.Status)
	assert.Equal(t, "A token can live at most 90 days, so that a leaked one stops working on its own; make a new one when it expires.", got.text("error-expires_in_days"))
	max, _ := got.Doc.Find(`[data-testid="input-expires_in_days"]`).Attr("max")
	assert.Equal(t, "90", max)
	tokens, err := p.Store.APITokens(context.Background(), accountOf(t, p, "alice").ID)
	require.NoError(t, err)
	assert.Empty(t, tokens)

	ok := b.post(p.URL+"/profile/tokens", url.Values{"gorilla.csrf.Token": {profile.csrf()}, "name": {"y"}, "expires_in_days": {"90"}})
	require.Equal(t, http.StatusOK, ok.Status)
	tokens, err = p.Store.APITokens(context.Background(), accountOf(t, p, "alice").ID)
	require.NoError(t, err)
	require.Len(t, tokens, 1)
	assert.WithinDuration(t, time.Now().Add(90*24*time.Hour), tokens[0].ExpiresAt, time.Minute)
}

func TestAdminsListAndRevokeAnyonesTokens(t *testing.T) {
	p := startPortal(t, portalOptions{})
	owner := newBrowser(t)
	require.Equal(t, "dave", owner.login(p.URL, "/", "dave").text("user-name"))
	secret := createToken(t, p, owner, "dave-ci", false)
	tok, err := p.Store.APITokenByHash(context.Background(), auth.HashToken(secret))
	require.NoError(t, err)
	id := itoa(tok.ID)

	researcher := newBrowser(t)
	researcher.login(p.URL, "/", "alice")
	assert.Equal(t, http.StatusForbidden, researcher.get(p.URL+"/admin/tokens").Status, "only admins list everyone's tokens")
	page := researcher.get(p.URL + "/profile")
	assert.Equal(t, http.StatusForbidden, researcher.post(p.URL+"/admin/tokens/"+id+"/revoke", url.Values{"gorilla.csrf.Token": {page.csrf()}}).Status)

	admin := newBrowser(t)
	list := admin.login(p.URL, "/admin/tokens", "erin")
	require.Equal(t, http.StatusOK, list.Status, list.Body)
	assert.Equal(t, "dave", list.text("owner-"+id))
	assert.Equal(t, "dave-ci", strings.TrimSpace(list.Doc.Find(`[data-testid="token-`+id+`"] th`).Text()))

	revoked := admin.post(p.URL+"/admin/tokens/"+id+"/revoke", url.Values{"gorilla.csrf.Token": {list.csrf()}})
	require.Equal(t, http.StatusOK, revoked.Status, revoked.Body)
	assert.Equal(t, "/admin/tokens", revoked.URL.Path)
	assert.Contains(t, revoked.text("flash"), `"dave-ci" of dave revoked`)
	assert.Equal(t, "revoked", revoked.Doc.Find(`[data-testid="token-`+id+`"]`).AttrOr("data-state", ""))

	status, _ := owner.me(p.URL, secret)
	assert.Equal(t, http.StatusUnauthorized, status, "the owner's scripts are refused")
	entries, err := p.Store.AuditEntries(context.Background(), store.AuditFilter{Actor: "erin", Action: "token.revoke"})
	require.NoError(t, err)
	require.Len(t, entries, 1)
	assert.Equal(t, "api-token/"+id, entries[0].Target)
}
