package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestResearcherOpensANotebookInTheBrowser: alice launches a notebook and
// clicks Open: the stand-in's page loads inside the portal's origin under
// the notebook's base URL, and its WebSocket message round-trips through
// the proxy. Bob (her team) is refused until she shares it; carol (another
// team) always. Stopped, its Open link says so and offers Resume.
func TestResearcherOpensANotebookInTheBrowser(t *testing.T) {
	portal := startLaunchPortal(t)
	b := NewBrowser(t, portal)
	b.LoginAs("alice")
	b.Open("/launch")
	b.Submit(testID("launch-jupyter-pytorch"))
	b.Submit(testID("launch-submit"))
	require.True(t, strings.HasPrefix(b.Path(), "/teams/vision/jobs/jupyter-pytorch-"), "lands on the job page, at %s", b.Path())
	name := strings.TrimPrefix(b.Path(), "/teams/vision/jobs/")
	jobPage, open := "/teams/vision/jobs/"+name, "/teams/vision/jobs/"+name+"/open/"
	t.Cleanup(func() {
		b.Open(jobPage)
		if b.HasTestID("delete") {
			b.Submit(testID("delete"))
		}
	})
	waitForPhase(t, b, "running")

	// Open, from the job page; until the server is ready the page says it is starting.
	require.Eventually(t, func() bool {
		b.Open(jobPage)
		b.Submit(testID("open"))
		return b.HasTestID("base-path")
	}, 2*time.Minute, time.Second, "the notebook opens; at %s", b.URL())
	assert.Equal(t, portal.URL+open, b.URL(), "the notebook is inside the portal's origin")
	assert.Equal(t, open, b.TestIDText("base-path"), "served under the notebook's base URL")
	require.Eventually(t, func() bool {
		return b.TestIDText("echo") == "echo: hello through the proxy"
	}, 30*time.Second, 200*time.Millisecond, "the WebSocket message comes back; shows %q", b.TestIDText("echo"))

	b.Open("/jobs")
	assert.True(t, b.exists(`[data-testid="job-`+name+`"] a[href="`+open+`"]`), "the jobs list links Open")

	refused := func(who string) {
		t.Helper()
		b.Open(open)
		require.True(t, b.HasTestID("error-page"), "%s gets the refusal page, at %s", who, b.URL())
		assert.Equal(t, "Not yours to open", b.Text("h1"), who)
		assert.False(t, b.HasTestID("base-path"), who)
	}
	b.Logout()
	b.LoginAs("bob")
	refused("bob before alice shares")
	b.Logout()
	b.LoginAs("carol")
	refused("carol, of another team")

	b.Logout()
	b.LoginAs("alice")
	b.Open(jobPage)
	b.Submit(testID("share"))
	assert.Contains(t, b.TestIDText("share-state"), "members of the team can open it")
	b.Logout()
	b.LoginAs("bob")
	b.Open(jobPage)
	b.Submit(testID("open"))
	assert.Equal(t, open, b.TestIDText("base-path"), "bob opens it once shared")
	b.Open("/") // the notebook's page has no portal menu
	b.Logout()
	b.LoginAs("carol")
	refused("carol, after alice shared it with her team")

	b.Logout()
	b.LoginAs("alice")
	b.Open(jobPage)
	b.Submit(testID("stop"))
	waitForPhase(t, b, "stopped")
	b.Open(open)
	assert.Contains(t, b.TestIDText("open-unavailable"), "The notebook is stopped")
	require.True(t, b.HasTestID("resume"), "the stopped notebook's page offers Resume")
	b.Submit(testID("resume"))
	assert.Equal(t, jobPage, b.Path(), "Resume returns to the job page")
	waitForPhase(t, b, "running")
}
