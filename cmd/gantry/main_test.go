package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gantry-dev/gantry/internal/config"
	"github.com/gantry-dev/gantry/internal/devcluster/stacktest"
)

var loginAction = regexp.MustCompile(`action="(/interaction/[^"]+/login)"`)

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

func repoFile(t *testing.T, rel string) string {
	t.Helper()
	wd, err := os.Getwd()
	require.NoError(t, err)
	return filepath.Join(wd, "..", "..", rel)
}

// TestPortalAgainstLocalStack starts the real portal wiring against the
// whole local stack: migrations, team seeding, OIDC login, the home page's
// quota read from Kueue, readiness of both dependencies, graceful shutdown.
func TestPortalAgainstLocalStack(t *testing.T) {
	env := stacktest.Stack(t)
	addr := freeAddr(t)
	cfg, err := config.Load([]string{
		"--listen", addr,
		"--oidc-issuer", env.IssuerURL,
		"--oidc-client-id", "gantry",
		"--oidc-client-secret", "gantry-dev-secret",
		"--database-url", stacktest.Postgres(t),
		"--kubeconfig", env.Kubeconfig,
		"--prometheus-url", env.PrometheusURL,
		"--seed-teams", repoFile(t, "deploy/local/teams.yaml"),
	}, func(string) string { return "" })
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- run(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil))) }()

	base := "http://" + addr
	require.Eventually(t, func() bool {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 90*time.Second, 250*time.Millisecond, "portal becomes ready (database and API server)")

	resp, err := http.Get(base + "/readyz")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Contains(t, string(body), "database: ok")
	assert.Contains(t, string(body), "kubernetes: ok")

	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	client := &http.Client{Jar: jar, Timeout: 20 * time.Second}
	resp, err = client.Get(base + "/")
	require.NoError(t, err)
	form, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := loginAction.FindStringSubmatch(string(form))
	require.NotNil(t, m, "IdP login form expected:\n%s", form)
	action := resp.Request.URL.ResolveReference(&url.URL{Path: m[1]})
	resp, err = client.PostForm(action.String(), url.Values{"login": {"bob"}, "password": {"gantry-dev"}})
	require.NoError(t, err)
	doc, err := goquery.NewDocumentFromReader(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	text := func(sel string) string { return strings.TrimSpace(doc.Find(sel).First().Text()) }

	assert.Equal(t, "bob", text(`[data-testid="user-name"]`))
	assert.Equal(t, "team lead", text(`[data-testid="user-role"]`))
	card := doc.Find(`[data-testid="team-vision"]`)
	require.Equal(t, 1, card.Length(), "vision card")
	assert.Equal(t, "default", strings.TrimSpace(card.Find(`[data-testid="team-queue"]`).Text()))
	assert.Equal(t, "team-vision", strings.TrimSpace(card.Find(`[data-testid="team-namespace"]`).Text()))
	assert.Equal(t, 1, card.Find(`[data-testid="quota-h100-sxm-ib-training-nvidia.com/gpu"]`).Length(), "GPU quota from the ClusterQueue")
	assert.Zero(t, doc.Find(`[data-testid="cluster-error"]`).Length())

	cancel()
	select {
	case err := <-done:
		assert.NoError(t, err, "graceful shutdown")
	case <-time.After(30 * time.Second):
		t.Fatal("portal did not shut down")
	}
	_, err = http.Get(base + "/healthz")
	assert.Error(t, err, "listener closed")
}
