package e2e

import (
	"context"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// DevPassword is the password of every seeded user of the dev IdP.
const DevPassword = "gantry-dev"

// chromiumPath is Debian's Chromium; GANTRY_E2E_CHROMIUM overrides it.
const chromiumPath = "/usr/bin/chromium"

// Timeouts of browser steps. Page loads on a busy 2-core machine with the whole
// stack running can take seconds.
const (
	stepTimeout = 30 * time.Second
	pollEvery   = 100 * time.Millisecond
)

// Browser is a fresh headless Chromium (own profile, no cookies) for one
// test, pointed at one portal. Its methods fail the test on error, with the
// current URL in the message, and a screenshot of the page is saved to
// e2e-screenshots/<test>.png under the stack's .local folder when the test
// fails.
type Browser struct {
	t      testing.TB
	ctx    context.Context
	portal *Portal

	mu      sync.Mutex
	console []chromedp.ConsoleMessage
}

// NewBrowser starts Chromium for the test; it is closed when the test ends.
func NewBrowser(t testing.TB, portal *Portal) *Browser {
	t.Helper()
	path := chromiumPath
	if p := os.Getenv("GANTRY_E2E_CHROMIUM"); p != "" {
		path = p
	}
	opts := append(slices.Clone(chromedp.DefaultExecAllocatorOptions[:]),
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.UserDataDir(t.TempDir()),
		// Chromium leaves its singleton-socket folder in TMPDIR when it is killed.
		chromedp.Env("TMPDIR="+shortTempDir(t)),
		chromedp.WindowSize(1280, 900),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(allocCtx)
	t.Cleanup(func() {
		cancelCtx()
		cancelAlloc()
	})
	// The first run starts the browser and binds it to ctx, which has no deadline.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("e2e: start chromium %s: %v", path, err)
	}
	b := &Browser{t: t, ctx: ctx, portal: portal}
	go b.recordConsole(chromedp.Console(ctx))
	// Registered after the browser's cleanup, so it runs first, while the page is still open.
	t.Cleanup(func() {
		if t.Failed() {
			b.saveScreenshot()
			b.logConsole()
		}
	})
	return b
}

// shortTempDir is a temporary folder removed when the test ends, with a path
// short enough for the Unix socket Chromium creates in it (t.TempDir's is not).
func shortTempDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "gantry-e2e-")
	if err != nil {
		t.Fatalf("e2e: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// recordConsole keeps the page's console messages, uncaught exceptions and
// browser log entries (CSP violations among them) until the browser closes.
func (b *Browser) recordConsole(messages iter.Seq2[chromedp.ConsoleMessage, error]) {
	for m, err := range messages {
		if err != nil {
			return
		}
		b.mu.Lock()
		b.console = append(b.console, m)
		b.mu.Unlock()
	}
}

// ConsoleErrors are the error-level console messages, uncaught exceptions and
// CSP violations seen so far, as "URL: text" lines, leaving out those of the
// IdP's pages, which are not the portal's concern.
func (b *Browser) ConsoleErrors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, m := range b.console {
		if (m.Type == chromedp.ConsoleError || m.IsException()) && !strings.HasPrefix(m.URL, b.portal.IssuerURL+"/") {
			out = append(out, m.URL+": "+m.Text)
		}
	}
	return out
}

func (b *Browser) logConsole() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.console) == 0 {
		return
	}
	lines := make([]string, 0, len(b.console))
	for _, m := range b.console {
		lines = append(lines, fmt.Sprintf("%s %s: %s", m.Type, m.URL, m.Text))
	}
	b.t.Logf("---- browser console ----\n%s", strings.Join(lines, "\n"))
}

// do runs steps with a per-step timeout and fails the test on error.
func (b *Browser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.t.Fatalf("e2e: %s (at %s): %v", what, b.URL(), err)
	}
}

// Open navigates to a path of the portal (for example "/profile") and waits
// for the final page after redirects to load.
func (b *Browser) Open(path string) {
	b.t.Helper()
	b.do("open "+path, chromedp.Navigate(b.portal.URL+path))
}

// URL is the address of the page the browser shows now, or "" if it cannot be read.
func (b *Browser) URL() string {
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	u, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		return ""
	}
	return u
}

// Path is the portal path (with query) the browser shows now; it fails the
// test if the browser is not on the portal.
func (b *Browser) Path() string {
	b.t.Helper()
	u := b.URL()
	if !strings.HasPrefix(u, b.portal.URL+"/") {
		b.t.Fatalf("e2e: expected to be on the portal %s, but the browser is at %s", b.portal.URL, u)
	}
	return strings.TrimPrefix(u, b.portal.URL)
}

// OnIdPLogin reports whether the browser shows the IdP's login form.
func (b *Browser) OnIdPLogin() bool {
	return strings.HasPrefix(b.URL(), b.portal.IssuerURL+"/") && b.exists(`#login`)
}

// WaitForIdPLogin waits until the browser shows the IdP's login form.
func (b *Browser) WaitForIdPLogin() {
	b.t.Helper()
	b.waitUntil("the IdP login form", b.OnIdPLogin)
}

// WaitForPortal waits until the browser is back on the portal with a loaded page.
func (b *Browser) WaitForPortal() {
	b.t.Helper()
	b.waitUntil("a portal page", func() bool {
		return strings.HasPrefix(b.URL(), b.portal.URL+"/") && b.ready()
	})
}

// SubmitLogin fills the IdP's login form that the browser shows, submits it
// and waits until the browser has left the form's page.
func (b *Browser) SubmitLogin(user, password string) {
	b.t.Helper()
	b.WaitForIdPLogin()
	b.do("fill the IdP login form as "+user,
		chromedp.Clear(chromedp.ID("login")),
		chromedp.SendKeys(chromedp.ID("login"), user),
		chromedp.Clear(chromedp.ID("password")),
		chromedp.SendKeys(chromedp.ID("password"), password),
	)
	b.clickAndLeave("submit the IdP login form", chromedp.CSS("#submit"))
}

// LoginAs signs in to the portal as a seeded user through the IdP's real
// login form and waits until the browser is back on the portal.
func (b *Browser) LoginAs(user string) {
	b.t.Helper()
	b.Open("/auth/login?next=/")
	b.SubmitLogin(user, DevPassword)
	b.WaitForPortal()
}

// Logout presses the portal's logout button and waits until the sign-out at
// the IdP has finished and the browser has left the IdP's logout pages.
func (b *Browser) Logout() {
	b.t.Helper()
	b.clickAndLeave("press logout", chromedp.CSS(testID("logout")))
	b.waitUntil("the end of the sign-out", func() bool {
		u := b.URL()
		return u != "" && !strings.Contains(u, "/session/end") && b.ready()
	})
}

// Resize sets the viewport, for example to a phone's 390×844.
func (b *Browser) Resize(width, height int64) {
	b.t.Helper()
	b.do(fmt.Sprintf("resize to %dx%d", width, height), chromedp.EmulateViewport(width, height))
}

// OverflowsHorizontally reports whether the page is wider than the viewport,
// so that a reader would have to scroll sideways.
func (b *Browser) OverflowsHorizontally() bool {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	over, err := chromedp.Run(ctx, chromedp.Evaluate[bool](
		`document.documentElement.scrollWidth > document.documentElement.clientWidth`))
	if err != nil {
		b.t.Fatalf("e2e: measure the page (at %s): %v", b.URL(), err)
	}
	return over
}

// Fill replaces the value of the form field matching the CSS selector by typing.
func (b *Browser) Fill(selector, value string) {
	b.t.Helper()
	b.do("fill "+selector,
		chromedp.Clear(chromedp.CSS(selector)),
		chromedp.SendKeys(chromedp.CSS(selector), value),
	)
}

// Value is the current value of the form field matching the CSS selector.
func (b *Browser) Value(selector string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS(selector)))
	if err != nil {
		b.t.Fatalf("e2e: read the value of %s (at %s): %v", selector, b.URL(), err)
	}
	return v
}

// Submit clicks the button or link matching the CSS selector and waits for
// the page it leads to (after redirects) to load.
func (b *Browser) Submit(selector string) {
	b.t.Helper()
	b.clickAndLeave("click "+selector, chromedp.CSS(selector))
}

// WaitForTestID waits until an element with the data-testid is in the page.
func (b *Browser) WaitForTestID(id string) {
	b.t.Helper()
	b.do("wait for "+testID(id), chromedp.WaitReady(chromedp.CSS(testID(id))))
}

// HasTestID reports whether the page has an element with the data-testid now.
func (b *Browser) HasTestID(id string) bool {
	return b.exists(testID(id))
}

// TestIDText is the trimmed text of the first element with the data-testid.
func (b *Browser) TestIDText(id string) string {
	b.t.Helper()
	b.WaitForTestID(id)
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	text, err := chromedp.Run(ctx, chromedp.Evaluate[string](
		fmt.Sprintf(`document.querySelector(%q).textContent.trim()`, testID(id))))
	if err != nil {
		b.t.Fatalf("e2e: read %s (at %s): %v", testID(id), b.URL(), err)
	}
	return text
}

// TestIDsWithPrefix lists the distinct data-testid values in the page that
// start with prefix, sorted.
func (b *Browser) TestIDsWithPrefix(prefix string) []string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	ids, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](fmt.Sprintf(
		`Array.from(document.querySelectorAll('[data-testid^=%q]'), e => e.dataset.testid)`, prefix)))
	if err != nil {
		b.t.Fatalf("e2e: list data-testid %s* (at %s): %v", prefix, b.URL(), err)
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// Text is the visible text of the first element matching the CSS selector,
// or of the whole page when the selector is empty; the test fails if the
// selector matches nothing.
func (b *Browser) Text(selector string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	expr := `document.body ? document.body.innerText : ""`
	if selector != "" {
		expr = fmt.Sprintf(`(e => e === null ? null : e.innerText.trim())(document.querySelector(%q))`, selector)
	}
	text, err := chromedp.Run(ctx, chromedp.Evaluate[*string](expr))
	if err != nil {
		b.t.Fatalf("e2e: read the text of %q (at %s): %v", selector, b.URL(), err)
	}
	if text == nil {
		b.t.Fatalf("e2e: no element matches %s (at %s)", selector, b.URL())
	}
	return *text
}

func (b *Browser) exists(selector string) bool {
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	found, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(`document.querySelector(%q) !== null`, selector)))
	return err == nil && found
}

func (b *Browser) ready() bool {
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	state, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.readyState`))
	return err == nil && state == "complete"
}

// clickAndLeave clicks an element that submits a form or follows a link, and
// waits until the page it was on has been replaced by a loaded new one.
func (b *Browser) clickAndLeave(what string, sel chromedp.CSS) {
	b.t.Helper()
	b.do(what,
		chromedp.Evaluate[chromedp.Void](`window.gantryE2EOldPage = true`),
		chromedp.Click(sel, chromedp.NodeVisible),
	)
	b.waitUntil("a new page after: "+what, func() bool {
		ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
		defer cancel()
		left, err := chromedp.Run(ctx, chromedp.Evaluate[bool](
			`window.gantryE2EOldPage !== true && document.readyState === "complete"`))
		return err == nil && left
	})
}

// waitUntil polls cond, which may see pages in the middle of a redirect chain.
func (b *Browser) waitUntil(what string, cond func() bool) {
	b.t.Helper()
	deadline := time.Now().Add(stepTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			b.t.Fatalf("e2e: waited %s for %s; the browser is at %s", stepTimeout, what, b.URL())
		}
		time.Sleep(pollEvery)
	}
}

var unsafeFileChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

func (b *Browser) saveScreenshot() {
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Logf("e2e: screenshot: %v", err)
		return
	}
	dir := filepath.Join(b.portal.Stack.Layout.Local(), "e2e-screenshots")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.t.Logf("e2e: screenshot: %v", err)
		return
	}
	path := filepath.Join(dir, unsafeFileChars.ReplaceAllString(b.t.Name(), "_")+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Logf("e2e: screenshot: %v", err)
		return
	}
	b.t.Logf("e2e: screenshot of %s saved to %s", b.URL(), path)
}

func testID(id string) string {
	return fmt.Sprintf(`[data-testid=%q]`, id)
}
