package e2e

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readmeScreenshot is the picture README.md shows. This test takes it from
// the running product on every run (into .local/screenshots/) and replaces
// the committed one when GANTRY_UPDATE_SCREENSHOTS=1 (`make screenshots`).
const readmeScreenshot = "testdata/home.png"

func TestReadmeScreenshotIsALeadsHomePageFromTheRunningPortal(t *testing.T) {
	portal := StartPortal(t)
	b := NewBrowser(t, portal)
	b.LoginAs("bob")
	b.Open("/")
	b.WaitForTestID("team-vision")
	require.False(t, b.HasTestID("error-page"), "the README must not show an error page")
	require.False(t, b.HasTestID("cluster-error"), "the README must show figures read from the cluster")
	assert.Equal(t, "bob", b.TestIDText("user-name"))

	shot := b.Screenshot()
	img, err := png.Decode(bytes.NewReader(shot))
	require.NoError(t, err, "the screenshot is a PNG")
	assert.Equal(t, 1280, img.Bounds().Dx(), "taken at the browser's width")

	out := filepath.Join(portal.Stack.Layout.Root, ".local", "screenshots", filepath.Base(readmeScreenshot))
	require.NoError(t, os.MkdirAll(filepath.Dir(out), 0o755))
	require.NoError(t, os.WriteFile(out, shot, 0o644))
	t.Logf("screenshot of the home page: %s", out)
	if os.Getenv("GANTRY_UPDATE_SCREENSHOTS") == "1" {
		require.NoError(t, os.WriteFile(readmeScreenshot, shot, 0o644))
		t.Logf("README screenshot updated: e2e/%s", readmeScreenshot)
	}
}

// Screenshot is a PNG of what the browser window shows now.
func (b *Browser) Screenshot() []byte {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	shot, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Fatalf("e2e: screenshot of %s: %v", b.URL(), err)
	}
	return shot
}

// TestEveryRoleWalksItsNavigationInTheBrowser is what a newcomer does after
// `make run`: sign in as each seeded person and open every page their
// navigation offers. Each page must render without an error page or a
// script error; a screenshot of each lands in .local/screenshots/<user>/
// to look at.
func TestEveryRoleWalksItsNavigationInTheBrowser(t *testing.T) {
	portal := StartPortal(t)
	for _, user := range []string{"alice", "bob", "carol", "dave", "erin", "frank"} {
		t.Run(user, func(t *testing.T) {
			b := NewBrowser(t, portal)
			b.LoginAs(user)
			b.Open("/")
			links := b.navLinks()
			if user != "frank" {
				require.NotEmpty(t, links, "%s has a navigation", user)
			}
			dir := filepath.Join(portal.Stack.Layout.Root, ".local", "screenshots", user)
			require.NoError(t, os.MkdirAll(dir, 0o755))
			for _, path := range append([]string{"/"}, links...) {
				b.Open(path)
				assert.False(t, b.HasTestID("error-page"), "%s gets an error page at %s", user, path)
				name := unsafeFileChars.ReplaceAllString(strings.Trim(path, "/"), "_")
				if name == "" {
					name = "home"
				}
				require.NoError(t, os.WriteFile(filepath.Join(dir, name+".png"), b.Screenshot(), 0o644))
			}
			assert.Empty(t, b.ConsoleErrors(), "no script errors or CSP violations on %s's pages", user)
		})
	}
}

// navLinks are the paths the main navigation links to, in order.
func (b *Browser) navLinks() []string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	links, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
		`Array.from(document.querySelectorAll('nav[aria-label="Main"] a'), a => a.getAttribute('href'))`))
	if err != nil {
		b.t.Fatalf("e2e: read the navigation (at %s): %v", b.URL(), err)
	}
	return links
}
