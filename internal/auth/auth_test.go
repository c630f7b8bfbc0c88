package auth

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"

	"github.com/gantry-dev/gantry/internal/roster"
	"github.com/gantry-dev/gantry/internal/store"
)

func TestSafeNext(t *testing.T) {
	cases := map[string]struct {
		next, want string
	}{
		"empty":               {next: "", want: "/"},
		"local path":          {next: "/profile", want: "/profile"},
		"local path + query":  {next: "/jobs?team=vision&x=1", want: "/jobs?team=vision&x=1"},
		"absolute URL":        {next: "https://evil.example.com/", want: "/"},
		"scheme-relative":     {next: "//evil.example.com/x", want: "/"},
		"backslash trick":     {next: "/\\evil.example.com", want: "/"},
		"relative path":       {next: "profile", want: "/"},
		"javascript":          {next: "javascript:alert(1)", want: "/"},
		"header injection":    {next: "/x\r\nLocation: https://evil", want: "/"},
		"encoded double dash": {next: "/%2F%2Fevil.example.com", want: "/%2F%2Fevil.example.com"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, SafeNext(tc.next))
		})
	}
}

func TestGenerateToken(t *testing.T) {
	a, err := GenerateToken()
	require.NoError(t, err)
	b, err := GenerateToken()
	require.NoError(t, err)
	assert.NotEqual(t, a.Secret, b.Secret)
	assert.True(t, strings.HasPrefix(a.Secret, TokenPrefix))
	assert.Len(t, a.Secret, len(TokenPrefix)+43, "32 bytes, base64url without padding")
	assert.True(t, looksLikeToken(a.Secret))
	assert.Equal(t, HashToken(a.Secret), a.Hash)
	assert.Len(t, a.Hash, 32)
	assert.True(t, strings.HasPrefix(a.Secret, a.Prefix))
	assert.Len(t, a.Prefix, len(TokenPrefix)+6)
}

type teamList []roster.Team

func (l teamList) ActiveTeams(context.Context) ([]roster.Team, error) { return l, nil }

func TestResolveRoles(t *testing.T) {
	teams := teamList{
		{Name: "nlp", DisplayName: "Language", MemberGroups: store.StringList{"nlp-researchers"}, LeadGroups: store.StringList{"nlp-leads"}},
		{Name: "vision", DisplayName: "Computer Vision", CostCenter: "CC-1001", MemberGroups: store.StringList{"vision-researchers"}, LeadGroups: store.StringList{"vision-leads"}},
	}
	r := Resolver{Teams: teams, AdminGroups: []string{"gantry-admins"}}
	cases := map[string]struct {
		groups    []string
		wantRole  Role
		wantTeams []Membership
	}{
		"researcher": {groups: []string{"vision-researchers"}, wantRole: RoleResearcher,
			wantTeams: []Membership{{Team: "vision", DisplayName: "Computer Vision", CostCenter: "CC-1001"}}},
		"lead": {groups: []string{"vision-leads"}, wantRole: RoleTeamLead,
			wantTeams: []Membership{{Team: "vision", DisplayName: "Computer Vision", CostCenter: "CC-1001", Lead: true}}},
		"lead of one, member of another": {groups: []string{"nlp-researchers", "vision-leads"}, wantRole: RoleTeamLead,
			wantTeams: []Membership{{Team: "nlp", DisplayName: "Language"}, {Team: "vision", DisplayName: "Computer Vision", CostCenter: "CC-1001", Lead: true}}},
		"admin":         {groups: []string{"gantry-admins"}, wantRole: RoleAdmin},
		"admin in team": {groups: []string{"gantry-admins", "nlp-researchers"}, wantRole: RoleAdmin, wantTeams: []Membership{{Team: "nlp", DisplayName: "Language"}}},
		"no groups":     {wantRole: RoleResearcher},
		"unknown group": {groups: []string{"marketing"}, wantRole: RoleResearcher},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			u, err := r.Resolve(context.Background(), store.User{Username: "x", Groups: tc.groups})
			require.NoError(t, err)
			assert.Equal(t, tc.wantRole, u.Role)
			assert.Equal(t, tc.wantTeams, u.Teams)
			assert.Equal(t, len(tc.wantTeams) > 0, u.HasTeam())
			assert.Equal(t, "x", u.Name, "name falls back to the username")
		})
	}
	t.Run("only mapped groups reach Kubernetes", func(t *testing.T) {
		u, err := r.Resolve(context.Background(), store.User{Username: "x", Groups: []string{"marketing", "vision-researchers", "gantry-admins", "all-staff"}})
		require.NoError(t, err)
		assert.Equal(t, []string{"vision-researchers", "gantry-admins"}, u.ClusterGroups)
		assert.Equal(t, []string{"marketing", "vision-researchers", "gantry-admins", "all-staff"}, u.Groups, "every group is still shown")
		assert.True(t, u.HasAccess())
		none, err := r.Resolve(context.Background(), store.User{Username: "y", Groups: []string{"marketing"}})
		require.NoError(t, err)
		assert.Empty(t, none.ClusterGroups)
		assert.False(t, none.HasAccess())
	})
	assert.Equal(t, "researcher", RoleResearcher.String())
	assert.Equal(t, "team lead", RoleTeamLead.String())
	assert.Equal(t, "admin", RoleAdmin.String())
}

func TestUserVia(t *testing.T) {
	assert.Equal(t, "browser", (&User{}).Via())
	assert.Equal(t, "token:7", (&User{TokenID: 7}).Via())
}

func TestBearerParsing(t *testing.T) {
	cases := map[string]struct {
		header string
		want   string
		ok     bool
	}{
		"bearer":    {header: "Bearer gty_abc", want: "gty_abc", ok: true},
		"lowercase": {header: "bearer gty_abc", want: "gty_abc", ok: true},
		"basic":     {header: "Basic dXNlcjpwYXNz"},
		"empty":     {header: ""},
		"no value":  {header: "Bearer "},
		"no space":  {header: "Bearergty_abc"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := bearer(tc.header)
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.want, got)
		})
	}
}

var loginAction = regexp.MustCompile(`action="(/interaction/[^"]+/login)"`)

// codeFor drives the dev IdP's login form for username through the
// authorization URL and returns the query the IdP sends to the callback.
func codeFor(t *testing.T, authURL, username string) url.Values {
	t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	var callback *url.URL
	client := &http.Client{Jar: jar, Timeout: 20 * time.Second, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if req.URL.Path == "/auth/callback" {
			callback = req.URL
			return http.ErrUseLastResponse
		}
		return nil
	}}
	resp, err := client.Get(authURL)
	require.NoError(t, err)
	body := readAll(t, resp)
	m := loginAction.FindStringSubmatch(body)
	require.NotNil(t, m, "IdP login form expected, got %d: %s", resp.StatusCode, body)
	action := resp.Request.URL.ResolveReference(&url.URL{Path: m[1]})
	resp, err = client.PostForm(action.String(), url.Values{"login": {username}, "password": {"gantry-dev"}})
	require.NoError(t, err)
	readAll(t, resp)
	require.NotNil(t, callback, "IdP did not redirect to the callback")
	return callback.Query()
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

func newRP(t *testing.T, issuer, clientID, secret string, now func() time.Time) *OIDC {
	t.Helper()
	rp, err := NewOIDC(context.Background(), OIDCOptions{
		Issuer:                issuer,
		ClientID:              clientID,
		ClientSecret:          secret,
		Scopes:                []string{"openid", "profile", "email", "groups"},
		RedirectURL:           "http://127.0.0.1:38123/auth/callback",
		PostLogoutRedirectURL: "http://127.0.0.1:38123/",
		Now:                   now,
	})
	require.NoError(t, err)
	return rp
}

// idToken runs a login at the IdP for rp's client with the given nonce and returns the raw ID token.
func idToken(t *testing.T, rp *OIDC, username, nonce string) string {
	t.Helper()
	verifier := oauth2.GenerateVerifier()
	q := codeFor(t, rp.oauth.AuthCodeURL("s", oidc.Nonce(nonce), oauth2.S256ChallengeOption(verifier)), username)
	tok, err := rp.oauth.Exchange(oidc.ClientContext(context.Background(), rp.httpClient), q.Get("code"), oauth2.VerifierOption(verifier))
	require.NoError(t, err)
	raw, _ := tok.Extra("id_token").(string)
	require.NotEmpty(t, raw)
	return raw
}

func TestRefuseReservedNames(t *testing.T) {
	cases := map[string]struct {
		id   Identity
		want *ReservedNameError
	}{
		"ordinary":              {id: Identity{Username: "alice", Groups: []string{"vision-researchers", "systems-team"}}},
		"system: username":      {id: Identity{Username: "system:kube-controller-manager"}, want: &ReservedNameError{What: "username", Name: "system:kube-controller-manager"}},
		"system: group":         {id: Identity{Username: "mallory", Groups: []string{"vision-researchers", "system:masters"}}, want: &ReservedNameError{What: "group", Name: "system:masters"}},
		"system: inside a name": {id: Identity{Username: "oidc:system:x"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := refuseReserved(tc.id)
			if tc.want == nil {
				assert.NoError(t, err)
				return
			}
			var got *ReservedNameError
			require.ErrorAs(t, err, &got)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestTokenOwnerErrorIsAnInvalidToken(t *testing.T) {
	err := fmt.Errorf("token 3: %w", &TokenOwnerError{Inactive: 31 * 24 * time.Hour, Limit: 30 * 24 * time.Hour})
	assert.ErrorIs(t, err, ErrInvalidToken)
	assert.Equal(t, "token 3: the API token's owner has not signed in for 31 days (the limit is 30 days)", err.Error())
	assert.Equal(t, "the API token's owner was in no team and no admin group at their last sign-in", (&TokenOwnerError{Limit: time.Hour}).Error())
}
