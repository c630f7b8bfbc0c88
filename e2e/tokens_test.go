package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAPITokenMadeInTheBrowserActsAsTheUserUntilRevoked(t *testing.T) {
	portal := StartPortal(t)
	b := NewBrowser(t, portal)
	b.LoginAs("dave")
	b.Open("/profile")

	b.Fill("#token-name", "ci-nightly")
	b.Fill("#token-expires", "30")
	b.Submit(testID("create-token"))
	token := b.Value(testID("new-token"))
	require.NotEmpty(t, token, "the new token is shown once")

	status, me := getMe(t, portal, token)
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, "dave", me.Username)
	assert.Equal(t, "team lead", me.Role)
	require.Len(t, me.Teams, 1)
	assert.Equal(t, "nlp", me.Teams[0].Name)

	b.Open("/profile")
	assert.False(t, b.HasTestID("new-token-panel"), "the token must not be shown a second time")
	row := b.tokenRowID("ci-nightly")
	b.Submit(testID("revoke-" + row))

	status, _ = getMe(t, portal, token)
	assert.Equal(t, http.StatusUnauthorized, status, "a revoked token is refused")
}

// tokenRowID is the id in the token list row (data-testid token-<id>) of the token with that name.
func (b *Browser) tokenRowID(name string) string {
	b.t.Helper()
	for _, id := range b.TestIDsWithPrefix("token-") {
		var n int
		if _, err := fmt.Sscanf(id, "token-%d", &n); err != nil {
			continue
		}
		if b.Text(testID(id)+" th") == name {
			return fmt.Sprint(n)
		}
	}
	b.t.Fatalf("e2e: no token named %q in the list at %s", name, b.URL())
	return ""
}

type apiMe struct {
	Username string `json:"username"`
	Role     string `json:"role"`
	Teams    []struct {
		Name string `json:"name"`
	} `json:"teams"`
}

func getMe(t *testing.T, portal *Portal, token string) (int, apiMe) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, portal.URL+"/api/v1/me", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var me apiMe
	if resp.StatusCode == http.StatusOK {
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&me))
	}
	return resp.StatusCode, me
}
