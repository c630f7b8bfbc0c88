package e2e

import (
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAnonymousVisitSignsInThroughIdPAndReturnsToThePageAsked(t *testing.T) {
	portal := StartPortal(t)
	b := NewBrowser(t, portal)

	b.Open("/profile")
	b.WaitForIdPLogin()
	assert.True(t, strings.HasPrefix(b.URL(), portal.IssuerURL+"/"), "anonymous visit should land on the IdP, got %s", b.URL())

	b.SubmitLogin("alice", DevPassword)
	b.WaitForPortal()

	u, err := url.Parse(b.URL())
	require.NoError(t, err)
	assert.Equal(t, "/profile", u.Path, "should come back to the page first asked for")
	assert.Equal(t, "alice", b.TestIDText("user-name"))
}

func TestIdPLoginFormRefusesAWrongPassword(t *testing.T) {
	portal := StartPortal(t)
	b := NewBrowser(t, portal)

	b.Open("/")
	b.SubmitLogin("alice", "not-the-password")
	b.WaitForIdPLogin()

	assert.Contains(t, b.Text(""), "The username or password is wrong")
	b.SubmitLogin("alice", DevPassword)
	b.WaitForPortal()
	assert.Equal(t, "alice", b.TestIDText("user-name"))
}

func TestSeededUsersSeeTheirTeamsAndRole(t *testing.T) {
	portal := StartPortal(t)
	cases := map[string]struct {
		role  string
		teams []string
	}{
		"alice": {role: "researcher", teams: []string{"team-vision"}},
		"bob":   {role: "team lead", teams: []string{"team-vision"}},
		"carol": {role: "researcher", teams: []string{"team-nlp"}},
		"dave":  {role: "team lead", teams: []string{"team-nlp"}},
		"erin":  {role: "admin", teams: nil},
	}
	for user, want := range cases {
		t.Run(user, func(t *testing.T) {
			b := NewBrowser(t, portal)
			b.LoginAs(user)
			b.Open("/")

			assert.Equal(t, user, b.TestIDText("user-name"))
			assert.Equal(t, want.role, b.TestIDText("user-role"))
			assert.Equal(t, want.teams, teamMarkers(b.TestIDsWithPrefix("team-")))
			assert.False(t, b.HasTestID("no-team"), "%s must not get the no-team page", user)
			assert.False(t, b.HasTestID("error-page"), "%s must not get an error page", user)
			assert.Empty(t, b.ConsoleErrors(), "no script errors or CSP violations")
		})
	}
}

func TestHomeShowsTheTeamsQueueAndGPUQuotaFromTheCluster(t *testing.T) {
	portal := StartPortal(t)
	b := NewBrowser(t, portal)
	b.LoginAs("bob")
	b.Open("/")

	b.WaitForTestID("team-vision")
	assert.False(t, b.HasTestID("cluster-error"), "the local cluster is up, so the home page must read it")
	card := `[data-testid="team-vision"] `
	assert.Equal(t, "default", b.Text(card+`[data-testid="team-queue"]`))
	// teams.yaml gives vision 8 H100s; nothing runs in a fresh stack's team namespace.
	assert.Equal(t, "0 / 8", b.Text(card+`[data-testid="quota-h100-sxm-ib-training-nvidia.com/gpu"] .quota-figures`))
}

func TestLogoutEndsTheSessionAtThePortalAndTheIdP(t *testing.T) {
	portal := StartPortal(t)
	b := NewBrowser(t, portal)
	b.LoginAs("bob")
	b.Open("/")
	require.Equal(t, "bob", b.TestIDText("user-name"))

	b.Logout()

	// Were either session still alive, this would come straight back signed in.
	b.Open("/")
	b.WaitForIdPLogin()
	assert.False(t, b.HasTestID("user-name"))

	// Signing in again works, as a different user.
	b.SubmitLogin("carol", DevPassword)
	b.WaitForPortal()
	assert.Equal(t, "carol", b.TestIDText("user-name"))
	assert.Empty(t, b.ConsoleErrors(), "no script errors or CSP violations along the way")
}

func TestUserWithoutTeamGetsTheClearPage(t *testing.T) {
	portal := StartPortal(t)
	b := NewBrowser(t, portal)
	b.LoginAs("frank")
	b.Open("/")

	b.WaitForTestID("no-team")
	assert.Equal(t, "frank", b.TestIDText("user-name"))
	assert.False(t, b.HasTestID("error-page"), "a user without a team gets a page in words, not an error")
	assert.Empty(t, teamMarkers(b.TestIDsWithPrefix("team-")))
}

// teamMarkers keeps the team-<name> markers of seeded teams, dropping other
// data-testid values that merely start with "team-"; nil when there are none.
func teamMarkers(ids []string) []string {
	seededTeams := []string{"vision", "nlp", "platform"} // deploy/local/teams.yaml
	var out []string
	for _, id := range ids {
		if slices.Contains(seededTeams, strings.TrimPrefix(id, "team-")) {
			out = append(out, id)
		}
	}
	return out
}
