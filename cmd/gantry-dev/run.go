package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/gantry-dev/gantry/internal/devcluster"
)

// The portal address under `make run`.
const portalAddr = "127.0.0.1:8080"

// devLogins are the dev IdP's seeded accounts (deploy/local/idp/users.json).
var devLogins = []struct{ user, what string }{
	{"alice", "researcher, vision"},
	{"bob", "team lead, vision"},
	{"carol", "researcher, nlp"},
	{"dave", "team lead, nlp"},
	{"erin", "admin"},
	{"frank", "in no team"},
}

// runPortal brings up the whole stack, builds and starts the portal in the
// foreground, and on Ctrl-C stops the portal and whatever this run started.
func runPortal(ctx context.Context, s *devcluster.Stack) error {
	before, err := s.Running()
	if err != nil {
		return err
	}
	defer func() {
		fmt.Println("\nstopping what `make run` started…")
		stopCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := s.StopNewerThan(stopCtx, before); err != nil {
			fmt.Fprintln(os.Stderr, "gantry-dev:", err)
		}
	}()
	fmt.Println("bringing up the local stack (the first run builds Kubernetes, Kueue and kwok: several minutes)…")
	st, err := s.Up(ctx)
	if err != nil {
		return err
	}
	l := s.Layout()
	// Acceptance pods report through their logs; here a simulator writes them.
	if err := startSimulator(ctx, l); err != nil {
		return err
	}
	bin := filepath.Join(l.Local(), "bin", "gantry")
	fmt.Println("  … building the portal")
	build := exec.CommandContext(ctx, "go", devcluster.PortalBuildArgs(bin)...)
	build.Dir, build.Stdout, build.Stderr = l.Root, os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("build portal: %w", err)
	}
	url := "http://" + portalAddr
	// A portal left from an earlier run would answer the health check in
	// this one's place.
	if c, err := net.DialTimeout("tcp", portalAddr, time.Second); err == nil {
		_ = c.Close()
		return fmt.Errorf("something already listens on %s (a portal from an earlier run?): stop it and try again", portalAddr)
	}
	portal := exec.Command(bin)
	portal.Dir = l.Root
	portal.Stdout, portal.Stderr = os.Stdout, os.Stderr
	// Own process group: Ctrl-C reaches gantry-dev, which stops the portal
	// first. Should gantry-dev itself be killed, the portal goes with it.
	portal.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	portal.Env = append(os.Environ(),
		"GANTRY_LISTEN="+portalAddr,
		"GANTRY_PUBLIC_URL="+url,
		"GANTRY_OIDC_ISSUER="+st.IssuerURL,
		"GANTRY_OIDC_CLIENT_ID=gantry",
		"GANTRY_OIDC_CLIENT_SECRET=gantry-dev-secret",
		"GANTRY_DATABASE_URL="+st.PostgresURL,
		"GANTRY_KUBECONFIG="+st.Kubeconfig,
		"GANTRY_PROMETHEUS_URL="+st.PrometheusURL,
		"GANTRY_ADMIN_GROUPS=gantry-admins",
		"GANTRY_SEED_TEAMS="+l.Deploy("local", "teams.yaml"),
		"GANTRY_SEED_TEMPLATES="+l.Deploy("templates"),
	)
	if err := portal.Start(); err != nil {
		return fmt.Errorf("start portal: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- portal.Wait() }()
	if err := waitHealthy(ctx, url+"/healthz", exited); err != nil {
		_ = portal.Process.Signal(syscall.SIGTERM)
		return err
	}
	fmt.Printf("\nGantry is running at %s\n\nDev logins (password gantry-dev for all):\n", url)
	for _, d := range devLogins {
		fmt.Printf("  %-6s %s\n", d.user, d.what)
	}
	fmt.Printf("\nkubectl: export KUBECONFIG=%s\nPress Ctrl-C to stop.\n", st.Kubeconfig)
	select {
	case <-ctx.Done():
		_ = portal.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = portal.Process.Kill()
		}
		return nil
	case err := <-exited:
		return fmt.Errorf("portal exited: %w", err)
	}
}

func waitHealthy(ctx context.Context, url string, exited <-chan error) error {
	deadline := time.After(60 * time.Second)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case err := <-exited:
			return fmt.Errorf("portal exited before it was healthy: %w", err)
		case <-deadline:
			return fmt.Errorf("portal not healthy at %s after 60s", url)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
