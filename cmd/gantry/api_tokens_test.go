package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type apiTok struct {
	ID        int64   `json:"id"`
	Name      string  `json:"name"`
	Owner     string  `json:"owner"`
	ReadOnly  bool    `json:"readOnly"`
	RevokedAt *string `json:"revokedAt"`
	Secret    string  `json:"secret"`
}

// TestTokensThroughAPI: a person makes a read-only token for a script from
// their browser session through the API, the script reads but cannot
// write or make tokens, the owner and an admin list and revoke tokens, and
// a revoked token is refused.
func TestTokensThroughAPI(t *testing.T) {
	p := startTestPortal(t)
	spec := fetchSpec(t, p.URL)
	browser := p.signIn(t, "alice")
	csrf := browser.csrf()
	create := func(body string) (int, apiTok, apiErr) {
		status, raw := browser.do(http.MethodPost, "/api/v1/tokens", body, csrf)
		spec.conforms(t, http.MethodPost, "/api/v1/tokens", status, raw)
		var tok apiTok
		var e apiErr
		_ = json.Unmarshal([]byte(raw), &tok)
		_ = json.Unmarshal([]byte(raw), &e)
		return status, tok, e
	}

	status, _, e := create(`{"name":"ci","expiresInDays":365}`)
	require.Equal(t, http.StatusUnprocessableEntity, status)
	assert.Contains(t, e.Fields["expiresInDays"], "at most 90 days")
	status, ro, _ := create(`{"name":"nightly report","expiresInDays":7,"readOnly":true}`)
	require.Equal(t, http.StatusCreated, status)
	require.True(t, strings.HasPrefix(ro.Secret, "gty_"), "the secret is shown once: %q", ro.Secret)
	assert.True(t, ro.ReadOnly)
	status, full, _ := create(`{"name":"deployer","expiresInDays":1}`)
	require.Equal(t, http.StatusCreated, status)

	script := apiClient{t: t, u: p.withToken(t, "alice", ro.Secret), spec: spec}
	var mine struct{ Tokens []apiTok }
	require.Equal(t, http.StatusOK, script.call(http.MethodGet, "/api/v1/tokens", "", &mine))
	var names []string
	for _, tok := range mine.Tokens {
		names = append(names, tok.Name)
		assert.Empty(t, tok.Secret, "a listed token has no secret")
	}
	assert.Subset(t, names, []string{"nightly report", "deployer"})
	e = apiErr{}
	assert.Equal(t, http.StatusForbidden, script.call(http.MethodPost, "/api/v1/notifications/read", "", &e), "a read-only token does not write")
	e = apiErr{}
	deployer := apiClient{t: t, u: p.withToken(t, "alice", full.Secret), spec: spec}
	assert.Equal(t, http.StatusForbidden, deployer.call(http.MethodPost, "/api/v1/tokens", `{"name":"child","expiresInDays":90}`, &e))
	assert.Contains(t, e.Message, "cannot make another token")

	// The owner revokes the read-only token; the script is refused from then on.
	var revoked apiTok
	require.Equal(t, http.StatusOK, deployer.call(http.MethodPost, fmt.Sprintf("/api/v1/tokens/%d/revoke", ro.ID), "", &revoked))
	assert.NotNil(t, revoked.RevokedAt)
	assert.Equal(t, http.StatusUnauthorized, script.call(http.MethodGet, "/api/v1/me", "", nil), "a revoked token is refused")

	// An admin finds alice's other token and revokes it.
	erinBrowser := p.signIn(t, "erin")
	erin := apiClient{t: t, u: p.withToken(t, "erin", apiToken(t, erinBrowser, erinBrowser.csrf())), spec: spec}
	assert.Equal(t, http.StatusForbidden, deployer.call(http.MethodGet, "/api/v1/admin/tokens", "", nil), "only admins list everyone's tokens")
	var all struct{ Tokens []apiTok }
	require.Equal(t, http.StatusOK, erin.call(http.MethodGet, "/api/v1/admin/tokens", "", &all))
	var owner string
	for _, tok := range all.Tokens {
		if tok.ID == full.ID {
			owner = tok.Owner
		}
	}
	assert.Equal(t, "alice", owner)
	require.Equal(t, http.StatusOK, erin.call(http.MethodPost, fmt.Sprintf("/api/v1/admin/tokens/%d/revoke", full.ID), "", nil))
	assert.Equal(t, http.StatusUnauthorized, deployer.call(http.MethodGet, "/api/v1/me", "", nil))
}
