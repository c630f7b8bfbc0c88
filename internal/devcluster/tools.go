package devcluster

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// Pins are the versions of the binaries the local cluster runs, read from
// deploy/tools/pins.env.
type Pins struct {
	Kubernetes string
	Kwok       string
	Kueue      string
}

// Binary names in the bin folder.
const (
	binEtcd      = "etcd"
	binAPIServer = "kube-apiserver"
	binKCM       = "kube-controller-manager"
	binScheduler = "kube-scheduler"
	binKubectl   = "kubectl"
	binKwok      = "kwok"
	binKueue     = "kueue"
)

var allBinaries = []string{binEtcd, binAPIServer, binKCM, binScheduler, binKubectl, binKwok, binKueue}

// pinFiles feed the pins hash: a change in any of them means new binaries.
var pinFiles = []string{
	"pins.env",
	"kube/go.mod", "kube/go.sum", "kube/tools.go",
	"etcd/go.mod", "etcd/go.sum", "etcd/main.go",
}

// ReadPins reads deploy/tools/pins.env.
func ReadPins(l Layout) (Pins, error) {
	path := l.Deploy("tools", "pins.env")
	f, err := os.Open(path)
	if err != nil {
		return Pins{}, fmt.Errorf("read pins: %w", err)
	}
	defer f.Close()
	vals := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return Pins{}, fmt.Errorf("read pins: %s: bad line %q", path, line)
		}
		vals[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	if err := sc.Err(); err != nil {
		return Pins{}, fmt.Errorf("read pins: %w", err)
	}
	p := Pins{Kubernetes: vals["KUBERNETES_VERSION"], Kwok: vals["KWOK_VERSION"], Kueue: vals["KUEUE_VERSION"]}
	if p.Kubernetes == "" || p.Kwok == "" || p.Kueue == "" {
		return Pins{}, fmt.Errorf("read pins: %s needs KUBERNETES_VERSION, KWOK_VERSION and KUEUE_VERSION", path)
	}
	return p, nil
}

// PinsHash identifies one set of pinned binaries: the hash of the tools
// modules, the pins and the Go toolchain that builds them.
func PinsHash(l Layout) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "go %s\n", runtime.Version())
	for _, f := range pinFiles {
		b, err := os.ReadFile(l.Deploy("tools", f))
		if err != nil {
			return "", fmt.Errorf("hash pins: %w", err)
		}
		fmt.Fprintf(h, "%s %d\n", f, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// binDir is the folder of the current pins' binaries.
func (s *Stack) binDir() (string, error) {
	hash, err := PinsHash(s.layout)
	if err != nil {
		return "", err
	}
	return s.layout.BinDir(hash), nil
}

// bin is the path of one pinned binary.
func (s *Stack) bin(name string) string { return filepath.Join(s.bins, name) }

func binariesComplete(dir string) error {
	for _, b := range allBinaries {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			return fmt.Errorf("binary %s missing in %s", b, dir)
		}
	}
	return nil
}

func binariesComponent() component {
	return component{
		name:  "binaries",
		group: GroupCluster,
		healthy: func(ctx context.Context, s *Stack) error {
			dir, err := s.binDir()
			if err != nil {
				return err
			}
			if err := binariesComplete(dir); err != nil {
				return err
			}
			s.bins = dir
			return linkKubectl(s)
		},
		start: buildBinaries,
	}
}

// buildBinaries builds every pinned binary into a temporary folder next to
// the final one and renames it into place, so an interrupted build never
// leaves a half set behind.
func buildBinaries(ctx context.Context, s *Stack) error {
	pins, err := ReadPins(s.layout)
	if err != nil {
		return err
	}
	dir, err := s.binDir()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(dir), err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".building-")
	if err != nil {
		return fmt.Errorf("create build folder: %w", err)
	}
	defer os.RemoveAll(tmp)

	minor := strings.Split(strings.TrimPrefix(pins.Kubernetes, "v"), ".")
	if len(minor) < 2 {
		return fmt.Errorf("pins: bad Kubernetes version %q", pins.Kubernetes)
	}
	ldflags := fmt.Sprintf("-X k8s.io/component-base/version.gitVersion=%s -X k8s.io/component-base/version.gitMajor=%s -X k8s.io/component-base/version.gitMinor=%s",
		pins.Kubernetes, minor[0], minor[1])
	steps := []struct {
		what string
		dir  string
		env  []string
		args []string
	}{
		{"etcd", s.layout.Deploy("tools", "etcd"), nil,
			[]string{"build", "-o", filepath.Join(tmp, binEtcd), "."}},
		{"kube-apiserver, kube-controller-manager, kube-scheduler, kubectl " + pins.Kubernetes, s.layout.Deploy("tools", "kube"), nil,
			[]string{"build", "-ldflags", ldflags, "-o", tmp + string(filepath.Separator),
				"k8s.io/kubernetes/cmd/kube-apiserver", "k8s.io/kubernetes/cmd/kube-controller-manager",
				"k8s.io/kubernetes/cmd/kube-scheduler", "k8s.io/kubernetes/cmd/kubectl"}},
		{"kwok " + pins.Kwok, tmp, []string{"GOBIN=" + tmp},
			[]string{"install", "sigs.k8s.io/kwok/cmd/kwok@" + pins.Kwok}},
		{"kueue " + pins.Kueue, tmp, []string{"GOBIN=" + tmp},
			[]string{"install", "sigs.k8s.io/kueue/cmd/kueue@" + pins.Kueue}},
	}
	for _, st := range steps {
		s.progress("    building %s (first time takes several minutes)", st.what)
		t0 := time.Now()
		cmd := exec.CommandContext(ctx, "go", st.args...)
		cmd.Dir = st.dir
		// The tools modules are built on their own, never as part of a
		// workspace or with the caller's flags.
		cmd.Env = append(os.Environ(), append([]string{"GOWORK=off", "GOFLAGS="}, st.env...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("build %s: %w\n%s", st.what, err, out)
		}
		s.progress("    built %s in %s", st.what, time.Since(t0).Round(time.Second))
	}
	if err := binariesComplete(tmp); err != nil {
		return fmt.Errorf("build: %w", err)
	}
	// MkdirTemp made the folder private; the binaries are for everyone.
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fmt.Errorf("build: %w", err)
	}
	_ = os.RemoveAll(dir)
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("install binaries into %s: %w", dir, err)
	}
	s.bins = dir
	return linkKubectl(s)
}

// linkKubectl points .local/bin/kubectl at the pinned kubectl, for people.
func linkKubectl(s *Stack) error {
	link := filepath.Join(s.layout.Local(), "bin", binKubectl)
	target := s.bin(binKubectl)
	if cur, err := os.Readlink(link); err == nil && cur == target {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		return fmt.Errorf("link kubectl: %w", err)
	}
	_ = os.Remove(link)
	if err := os.Symlink(target, link); err != nil {
		return fmt.Errorf("link kubectl: %w", err)
	}
	return nil
}
