package stacktest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/gantry-dev/gantry/internal/devcluster"
)

// FreshIdP starts a dev IdP of its own for the test (deploy/local/idp on a
// free loopback port, with the users.json of the working tree) and returns
// its issuer; it stops when the test ends. Tests of seeded users the shared
// IdP may not have loaded yet (it reads users.json at start) use it. Extra
// accounts are added to users.json's for this IdP only.
func FreshIdP(t testing.TB, extra ...IdPUser) string {
	t.Helper()
	up(t, devcluster.GroupIdP) // installs the IdP's npm packages
	wd, _ := os.Getwd()
	l, err := devcluster.FindLayout(wd)
	if err != nil {
		t.Fatalf("stacktest: %v", err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("stacktest: node.js is not installed: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("stacktest: free port: %v", err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	issuer := fmt.Sprintf("http://127.0.0.1:%d", port)

	var out bytes.Buffer
	cmd := exec.Command(node, "server.mjs")
	cmd.Dir = l.Deploy("local", "idp")
	cmd.Env = append(os.Environ(), fmt.Sprintf("IDP_PORT=%d", port), "IDP_ISSUER="+issuer)
	if len(extra) > 0 {
		path := filepath.Join(t.TempDir(), "extra-users.json")
		b, err := json.Marshal(extra)
		if err == nil {
			err = os.WriteFile(path, b, 0o600)
		}
		if err != nil {
			t.Fatalf("stacktest: write the IdP's extra users: %v", err)
		}
		cmd.Env = append(cmd.Env, "IDP_EXTRA_USERS="+path)
	}
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("stacktest: start IdP: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("stacktest: log of the test's own IdP:\n%s", out.String())
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, issuer+"/.well-known/openid-configuration", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return issuer
			}
		}
		select {
		case <-exited:
			t.Fatalf("stacktest: the test's IdP exited:\n%s", out.String())
		case <-ctx.Done():
			t.Fatalf("stacktest: the test's IdP did not serve discovery in 30s:\n%s", out.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// IdPUser is an account of a test's own IdP, as in deploy/local/idp/users.json;
// every account's password is the dev password.
type IdPUser struct {
	Username string   `json:"username"`
	Name     string   `json:"name"`
	Email    string   `json:"email"`
	Groups   []string `json:"groups"`
}
