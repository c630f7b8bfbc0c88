// Package e2e holds Gantry's end-to-end tests: a real portal process, the real
// local stack (cluster, Postgres, dev IdP) and Debian's Chromium driven by
// chromedp. This file and browser.go are the reusable harness; the tests are
// in the _test.go files.
package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gantry-dev/gantry/internal/devcluster"
	"github.com/gantry-dev/gantry/internal/devcluster/stacktest"
)

// Dev OIDC client of the portal, as registered in deploy/local/idp/server.mjs.
const (
	oidcClientID     = "gantry"
	oidcClientSecret = "gantry-dev-secret"
)

// Timeouts of a portal's life in a test.
const (
	portalStartTimeout = 90 * time.Second
	portalStopTimeout  = 30 * time.Second
)

// portalBuild builds ./cmd/gantry once per test binary.
var portalBuild struct {
	once sync.Once
	path string
	err  error
}

// Portal is a gantry process started for one test against the local stack.
type Portal struct {
	// URL is the portal's base URL (http://127.0.0.1:<port>), without a trailing slash.
	URL string
	// IssuerURL is the dev IdP the portal signs users in with.
	IssuerURL string
	// DatabaseURL is the test's own fresh database.
	DatabaseURL string
	// Stack is the running local stack.
	Stack *stacktest.Env

	logPath string
	proc    *portalProcess
}

// portalProcess is the running gantry process; ended is set once a test
// stopped or killed it on purpose, so clean-up does not stop it again.
type portalProcess struct {
	cmd    *exec.Cmd
	exited chan error
	mu     sync.Mutex
	ended  bool
	err    error
}

// PortalOption changes the environment a portal is started with.
type PortalOption func(env map[string]string)

// WithEnv sets one GANTRY_* variable of the portal, overriding the harness's default.
func WithEnv(name, value string) PortalOption {
	return func(env map[string]string) { env[name] = value }
}

// WithDatabase points the portal at an existing database instead of a
// fresh one, so several portals can share it (replicas).
func WithDatabase(dsn string) PortalOption {
	return WithEnv("GANTRY_DATABASE_URL", dsn)
}

// StartPortal builds the portal (once per test binary), starts it on a free
// loopback port with a fresh database and the local stack, and waits until
// /healthz answers. The process is stopped when the test ends; its log is
// printed if the test failed.
func StartPortal(t testing.TB, opts ...PortalOption) *Portal {
	t.Helper()
	p := LaunchPortal(t, opts...)
	p.WaitHealthy(t)
	return p
}

// LaunchPortal is StartPortal without waiting for /healthz, so a test can
// start several portals at once; call WaitHealthy on each.
func LaunchPortal(t testing.TB, opts ...PortalOption) *Portal {
	t.Helper()
	stack := stacktest.Stack(t)
	root := stack.Layout.Root
	bin, err := buildPortal(root)
	if err != nil {
		t.Fatalf("e2e: %v", err)
	}
	chosen := map[string]string{}
	for _, opt := range opts {
		opt(chosen)
	}
	dsn := chosen["GANTRY_DATABASE_URL"]
	if dsn == "" {
		dsn = stacktest.Postgres(t)
	}
	port, err := freePort()
	if err != nil {
		t.Fatalf("e2e: %v", err)
	}
	p := &Portal{
		URL:         fmt.Sprintf("http://127.0.0.1:%d", port),
		IssuerURL:   stack.IssuerURL,
		DatabaseURL: dsn,
		Stack:       stack,
		logPath:     filepath.Join(t.TempDir(), "portal.log"),
	}
	env := map[string]string{
		"GANTRY_LISTEN":             fmt.Sprintf("127.0.0.1:%d", port),
		"GANTRY_PUBLIC_URL":         p.URL,
		"GANTRY_OIDC_ISSUER":        stack.IssuerURL,
		"GANTRY_OIDC_CLIENT_ID":     oidcClientID,
		"GANTRY_OIDC_CLIENT_SECRET": oidcClientSecret,
		"GANTRY_DATABASE_URL":       dsn,
		"GANTRY_KUBECONFIG":         stack.Kubeconfig,
		"GANTRY_PROMETHEUS_URL":     stack.PrometheusURL,
		"GANTRY_SEED_TEAMS":         filepath.Join(root, "deploy", "local", "teams.yaml"),
		"GANTRY_LOG_LEVEL":          "debug",
		// Its own image allowlist ConfigMap: admin tests save allowlists, and
		// gantry-system's is the one the cluster enforces for every test.
		"GANTRY_SYSTEM_NAMESPACE": stack.Namespace(t, "gantry-system", nil),
	}
	for _, opt := range opts {
		opt(env)
	}
	p.start(t, bin, env)
	return p
}

// WaitHealthy waits until the portal's /healthz answers, failing the test
// if it does not within the start-up timeout.
func (p *Portal) WaitHealthy(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), portalStartTimeout)
	defer cancel()
	if err := p.waitHealthy(ctx, p.proc.exited); err != nil {
		t.Fatalf("e2e: portal on %s did not become healthy: %v", p.URL, err)
	}
}

// Kill ends the portal with SIGKILL, as a crashed node would: nothing is
// drained and no Lease is released.
func (p *Portal) Kill(t *testing.T) {
	t.Helper()
	pr := p.proc
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.ended {
		return
	}
	if err := pr.cmd.Process.Kill(); err != nil {
		t.Fatalf("e2e: kill portal: %v", err)
	}
	pr.err = <-pr.exited
	pr.ended = true
}

// Terminate sends SIGTERM and returns at once; Wait collects the exit.
func (p *Portal) Terminate(t *testing.T) {
	t.Helper()
	if err := p.proc.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("e2e: signal portal: %v", err)
	}
}

// Wait waits for the portal to exit (after Terminate) and returns how it
// exited; the test fails if that takes longer than the stop timeout.
func (p *Portal) Wait(t *testing.T) error {
	t.Helper()
	pr := p.proc
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.ended {
		return pr.err
	}
	select {
	case pr.err = <-pr.exited:
	case <-time.After(portalStopTimeout):
		_ = pr.cmd.Process.Kill()
		pr.err = <-pr.exited
		t.Errorf("e2e: portal did not stop within %s of SIGTERM; killed", portalStopTimeout)
	}
	pr.ended = true
	return pr.err
}

func (p *Portal) start(t testing.TB, bin string, env map[string]string) {
	t.Helper()
	logFile, err := os.Create(p.logPath)
	if err != nil {
		t.Fatalf("e2e: create portal log: %v", err)
	}
	cmd := exec.Command(bin)
	cmd.Env = portalEnviron(env)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	// A test binary stopped by ^C or a timeout runs no cleanup: the kernel
	// kills the portal with it, or it would hold its port and keep
	// answering from the caches of a cluster the next run changes.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		t.Fatalf("e2e: start portal %s: %v", bin, err)
	}
	exited := make(chan error, 1)
	go func() {
		exited <- cmd.Wait()
		logFile.Close()
	}()
	p.proc = &portalProcess{cmd: cmd, exited: exited}
	t.Cleanup(func() {
		p.proc.mu.Lock()
		ended := p.proc.ended
		p.proc.mu.Unlock()
		if !ended {
			p.stop(t, cmd, exited)
		}
		if t.Failed() {
			p.dumpLog(t)
		}
	})
}

// stop asks the portal to shut down gracefully and fails the test if it does not.
func (p *Portal) stop(t testing.TB, cmd *exec.Cmd, exited chan error) {
	t.Helper()
	select {
	case err := <-exited:
		t.Errorf("e2e: portal exited before the test ended: %v", err)
		return
	default:
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Errorf("e2e: stop portal: %v", err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("e2e: portal did not shut down cleanly on SIGTERM: %v", err)
		}
	case <-time.After(portalStopTimeout):
		_ = cmd.Process.Kill()
		<-exited
		t.Errorf("e2e: portal did not stop within %s of SIGTERM; killed", portalStopTimeout)
	}
}

func (p *Portal) waitHealthy(ctx context.Context, exited chan error) error {
	client := &http.Client{Timeout: 2 * time.Second}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/healthz", nil)
		if err != nil {
			return fmt.Errorf("build health request: %w", err)
		}
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("GET /healthz: %s", resp.Status)
		}
		last = err
		select {
		case err := <-exited:
			exited <- err
			return fmt.Errorf("portal exited during start-up: %v", err)
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %v)", ctx.Err(), last)
		case <-tick.C:
		}
	}
}

// Log returns what the portal has logged so far.
func (p *Portal) Log() string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return fmt.Sprintf("(read portal log: %v)", err)
	}
	return string(b)
}

func (p *Portal) dumpLog(t testing.TB) {
	t.Helper()
	t.Logf("---- portal log (%s) ----\n%s", p.URL, p.Log())
}

// portalEnviron is the test process's environment without any GANTRY_*
// variable of the developer's shell, plus the portal's configuration.
func portalEnviron(env map[string]string) []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GANTRY_") {
			out = append(out, kv)
		}
	}
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

func buildPortal(root string) (string, error) {
	portalBuild.once.Do(func() {
		dir := filepath.Join(root, ".local", "bin", "e2e")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			portalBuild.err = fmt.Errorf("build portal: %w", err)
			return
		}
		out := filepath.Join(dir, "gantry")
		cmd := exec.Command("go", devcluster.PortalBuildArgs(out)...)
		cmd.Dir = root
		if b, err := cmd.CombinedOutput(); err != nil {
			portalBuild.err = fmt.Errorf("build portal: go build ./cmd/gantry: %w\n%s", err, b)
			return
		}
		portalBuild.path = out
	})
	return portalBuild.path, portalBuild.err
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	addr, ok := l.Addr().(*net.TCPAddr)
	if !ok {
		return 0, errors.New("find a free port: listener has no TCP address")
	}
	return addr.Port, nil
}
