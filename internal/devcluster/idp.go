package devcluster

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// The dev OIDC provider (deploy/local/idp, the certified oidc-provider npm
// package with the seeded users).
const (
	idpPort  = 5556
	idpProcs = "idp"
)

// IssuerURL is the dev IdP's issuer.
func IssuerURL() string { return fmt.Sprintf("http://127.0.0.1:%d", idpPort) }

func idpComponent() component {
	return component{
		name:      "identity provider",
		group:     GroupIdP,
		processes: []string{idpProcs},
		ports:     []int{idpPort},
		healthy: func(ctx context.Context, s *Stack) error {
			if _, err := s.process(idpProcs); err != nil {
				return err
			}
			return httpOK(ctx, IssuerURL()+"/.well-known/openid-configuration")
		},
		start: startIdP,
	}
}

func startIdP(ctx context.Context, s *Stack) error {
	dir := s.layout.Deploy("local", "idp")
	node, err := exec.LookPath("node")
	if err != nil {
		return fmt.Errorf("node.js is not installed: %w", err)
	}
	if err := npmInstall(ctx, s, dir); err != nil {
		return err
	}
	ps, err := s.run(Process{
		Name: idpProcs,
		Path: node,
		Args: []string{"server.mjs"},
		Dir:  dir,
		Env:  []string{fmt.Sprintf("IDP_PORT=%d", idpPort), "IDP_ISSUER=" + IssuerURL()},
	})
	if err != nil {
		return err
	}
	// A minute, as for PostgreSQL: beside the other tests on a busy CI
	// machine a start once stayed over 30 s short of listening (its log
	// says which step took the time).
	if err := waitFor(ctx, "identity provider serves discovery", 60*time.Second, ps, func(ctx context.Context) error {
		return httpOK(ctx, IssuerURL()+"/.well-known/openid-configuration")
	}); err != nil {
		return err
	}
	s.state.IssuerURL = IssuerURL()
	return nil
}

// npmInstall runs `npm ci` when node_modules is missing or older than the
// lock file.
func npmInstall(ctx context.Context, s *Stack, dir string) error {
	lockInfo, err := os.Stat(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		return fmt.Errorf("identity provider: %w", err)
	}
	stamp, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json"))
	if err == nil && !stamp.ModTime().Before(lockInfo.ModTime()) {
		return nil
	}
	s.progress("    installing the identity provider's npm packages (npm ci)")
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("npm ci in %s: %w\n%s", dir, err, out)
	}
	return nil
}

func httpOK(ctx context.Context, url string) error { return httpDo(ctx, http.MethodGet, url) }

// httpPost sends an empty POST (Prometheus' /-/reload) and wants 200.
func httpPost(ctx context.Context, url string) error { return httpDo(ctx, http.MethodPost, url) }

func httpDo(ctx context.Context, method, url string) error {
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %s", method, url, resp.Status)
	}
	return nil
}
