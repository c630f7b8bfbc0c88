// Package devcluster brings up and tears down Gantry's local stack: a real
// Kubernetes control plane with Kueue and kwok-simulated GPU nodes,
// Prometheus, PostgreSQL and the dev OIDC provider. It is used by
// `make run`, `make cluster-up` and the integration and end-to-end tests.
package devcluster

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

const modulePath = "github.com/gantry-dev/gantry"

// Layout names the files the local stack keeps under the repository's
// git-ignored .local/ folder.
type Layout struct {
	// Root is the repository root (the folder holding Gantry's go.mod).
	Root string
}

// FindLayout walks up from dir to the repository root.
func FindLayout(dir string) (Layout, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Layout{}, fmt.Errorf("find repository root: %w", err)
	}
	for d := abs; ; d = filepath.Dir(d) {
		if isGantryModule(filepath.Join(d, "go.mod")) {
			return Layout{Root: d}, nil
		}
		if filepath.Dir(d) == d {
			return Layout{}, fmt.Errorf("find repository root: no go.mod of %s above %s", modulePath, abs)
		}
	}
}

func isGantryModule(goMod string) bool {
	f, err := os.Open(goMod)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "module ") {
			return strings.TrimSpace(strings.TrimPrefix(line, "module ")) == modulePath
		}
	}
	return false
}

// Local is the git-ignored folder for everything the stack writes: .local,
// or $GANTRY_LOCAL_DIR when set. A second stack runs from the same checkout
// with a folder of its own (make test runs the browser tests on one, in a
// network namespace of its own, beside the other packages' tests).
func (l Layout) Local() string {
	if d := os.Getenv("GANTRY_LOCAL_DIR"); d != "" {
		return d
	}
	return filepath.Join(l.Root, ".local")
}

// Logs is the folder of component logs.
func (l Layout) Logs() string { return filepath.Join(l.Local(), "logs") }

// LogFile is the log of one component.
func (l Layout) LogFile(component string) string {
	return filepath.Join(l.Logs(), component+".log")
}

// Data is the data folder of one component.
func (l Layout) Data(component string) string {
	return filepath.Join(l.Local(), "data", component)
}

// PKI is where locally generated certificates live.
func (l Layout) PKI() string { return filepath.Join(l.Local(), "pki") }

// Run holds sockets and generated configuration.
func (l Layout) Run() string { return filepath.Join(l.Local(), "run") }

// Kubeconfig is the admin kubeconfig of the local cluster.
func (l Layout) Kubeconfig() string { return filepath.Join(l.Local(), "kubeconfig") }

// StateFile records what is running.
func (l Layout) StateFile() string { return filepath.Join(l.Local(), "state.json") }

// Deploy is the repository's deploy/ folder.
func (l Layout) Deploy(elem ...string) string {
	return filepath.Join(append([]string{l.Root, "deploy"}, elem...)...)
}

// BinDir is where binaries built from the pins with the given hash live:
// $GANTRY_BIN_DIR/<hash> when set (so CI keeps them across clones),
// .local/bin/<hash> otherwise.
func (l Layout) BinDir(pinsHash string) string {
	if d := os.Getenv("GANTRY_BIN_DIR"); d != "" {
		return filepath.Join(d, pinsHash)
	}
	return filepath.Join(l.Local(), "bin", pinsHash)
}

func (l Layout) ensureDirs() error {
	for _, d := range []string{l.Logs(), l.PKI(), l.Run(), filepath.Join(l.Local(), "data")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", d, err)
		}
	}
	return nil
}

var errNotRunning = errors.New("not running")
