package e2e

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"path/filepath"
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
