// Package stacktest gives integration and end-to-end tests the real local
// stack: it brings the stack up (or reuses a running one), hands out fresh
// databases and namespaces, and dumps component logs when a test fails.
// A test whose dependency cannot be brought up fails; it skips only when
// asked for with -short (`make unit`).
package stacktest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	kueueclient "sigs.k8s.io/kueue/client-go/clientset/versioned"

	"github.com/gantry-dev/gantry/internal/devcluster"
)

// Env is the running local stack as a test sees it.
type Env struct {
	Kubeconfig string
	RESTConfig *rest.Config
	Kube       kubernetes.Interface
	// Kueue is the typed client of Kueue's API and visibility API.
	Kueue            kueueclient.Interface
	PrometheusURL    string
	IssuerURL        string
	PostgresAdminURL string
	// Layout locates the stack's files (logs, kubeconfig, deploy data).
	Layout devcluster.Layout
}

var upOnce struct {
	sync.Mutex
	done map[string]bool
	// release is the stack's test lock, held until the binary exits: kept
	// here so that the lock file is never closed (and the lock dropped)
	// while the binary still uses the stack.
	release func()
}

// up brings up the given parts once per test binary.
func up(t testing.TB, groups ...string) devcluster.State {
	t.Helper()
	if testing.Short() {
		// `make unit` asks for the tests that need nothing running. In CI
		// nothing may be skipped: -short there is a mistake, not a choice.
		if os.Getenv("CI") != "" {
			t.Fatal("stacktest: CI runs every test; -short would skip the ones that need the local stack")
		}
		t.Skip("needs the local stack; -short runs only the tests that need nothing running")
	}
	upOnce.Lock()
	defer upOnce.Unlock()
	key := strings.Join(groups, ",")
	wd, err := os.Getwd()
	if err != nil {
		t.Fatalf("stacktest: %v", err)
	}
	s, err := devcluster.New(wd, testWriter{t})
	if err != nil {
		t.Fatalf("stacktest: %v", err)
	}
	if upOnce.release == nil {
		// Test binaries take turns on one stack (see devcluster.LockForTests);
		// `make test` runs two at a time, so one may wait here for the other.
		// The wait counts in the time of the test that waited: say so.
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
		t0 := time.Now()
		release, err := devcluster.LockForTests(ctx, s.Layout())
		cancel()
		if err != nil {
			t.Fatalf("stacktest: wait for the other test binary on this stack to finish: %v", err)
		}
		if waited := time.Since(t0); waited > time.Second {
			t.Logf("stacktest: waited %s for another test binary to finish with the stack", waited.Round(time.Second))
		}
		upOnce.release = release
	}
	if upOnce.done == nil {
		upOnce.done = map[string]bool{}
	}
	if upOnce.done[key] {
		st, err := devcluster.ReadState(s.Layout())
		if err != nil {
			t.Fatalf("stacktest: %v", err)
		}
		return st
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	st, err := s.Up(ctx, groups...)
	if err != nil {
		dumpLogs(t, s.Layout())
		t.Fatalf("stacktest: bring up the local stack (%s): %v", key, err)
	}
	upOnce.done[key] = true
	return st
}

// Postgres ensures the local PostgreSQL runs and returns the DSN of a fresh
// database owned by the portal's role, dropped when the test ends.
func Postgres(t testing.TB) string {
	t.Helper()
	up(t, devcluster.GroupPostgres)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	name := databaseName(t.Name())
	admin, err := pgx.Connect(ctx, devcluster.PostgresAdminURL())
	if err != nil {
		t.Fatalf("stacktest: connect to PostgreSQL: %v", err)
	}
	defer admin.Close(context.Background())
	if _, err := admin.Exec(ctx, fmt.Sprintf(`CREATE DATABASE %q OWNER gantry`, name)); err != nil {
		t.Fatalf("stacktest: create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, devcluster.PostgresAdminURL())
		if err != nil {
			t.Errorf("stacktest: drop database %s: %v", name, err)
			return
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(ctx, fmt.Sprintf(`DROP DATABASE IF EXISTS %q WITH (FORCE)`, name)); err != nil {
			t.Errorf("stacktest: drop database %s: %v", name, err)
		}
	})
	return strings.Replace(devcluster.PostgresAppURL(), "/gantry?", "/"+name+"?", 1)
}

var nonWord = regexp.MustCompile(`[^a-z0-9]+`)

func databaseName(testName string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	base := strings.Trim(nonWord.ReplaceAllString(strings.ToLower(testName), "_"), "_")
	if len(base) > 40 {
		base = base[:40]
	}
	return "t_" + base + "_" + hex.EncodeToString(b)
}

// IdP ensures the dev identity provider runs and returns its issuer URL.
func IdP(t testing.TB) string {
	t.Helper()
	up(t, devcluster.GroupIdP)
	return devcluster.IssuerURL()
}

// Stack ensures the whole local stack runs and returns clients for it.
func Stack(t testing.TB) *Env {
	t.Helper()
	st := up(t, devcluster.AllGroups()...)
	wd, _ := os.Getwd()
	l, err := devcluster.FindLayout(wd)
	if err != nil {
		t.Fatalf("stacktest: %v", err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", l.Kubeconfig())
	if err != nil {
		t.Fatalf("stacktest: load %s: %v", l.Kubeconfig(), err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("stacktest: kubernetes client: %v", err)
	}
	kq, err := kueueclient.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("stacktest: kueue client: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			dumpLogs(t, l)
		}
	})
	return &Env{
		Kueue:            kq,
		Kubeconfig:       l.Kubeconfig(),
		RESTConfig:       cfg,
		Kube:             kube,
		PrometheusURL:    st.PrometheusURL,
		IssuerURL:        devcluster.IssuerURL(),
		PostgresAdminURL: devcluster.PostgresAdminURL(),
		Layout:           l,
	}
}

// Namespace creates a throwaway namespace (deleted when the test ends) with
// the given labels and returns its name.
func (e *Env) Namespace(t testing.TB, prefix string, labels map[string]string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ns, err := e.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-", Labels: labels},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("stacktest: create namespace %s-*: %v", prefix, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = e.Kube.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{})
	})
	return ns.Name
}

func dumpLogs(t testing.TB, l devcluster.Layout) {
	t.Helper()
	logs, _ := filepath.Glob(filepath.Join(l.Logs(), "*.log"))
	for _, f := range logs {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
		if len(lines) > 30 {
			lines = lines[len(lines)-30:]
		}
		t.Logf("---- last lines of %s ----\n%s", filepath.Base(f), strings.Join(lines, "\n"))
	}
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
