package devcluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The pod network: kwok hands simulated pods IPs from PodCIDR, and those
// addresses live only inside a network namespace the stack creates itself
// (never on the host's own interfaces). A veth pair links it to the
// namespace the stack runs in, PodCIDR is routed into it, and inside it the
// whole PodCIDR is local, so one stand-in server bound to 0.0.0.0 answers
// at every pod's IP: the portal's proxies take their production path (a
// ready endpoint's IP from an EndpointSlice) to a real server.
const (
	// PodCIDR is the simulated pods' address range.
	PodCIDR = "10.244.0.0/16"
	// kwokCIDR is PodCIDR with the address kwok counts up from (kwok
	// gives out the next address first, 10.244.0.2).
	kwokCIDR = "10.244.0.1/16"
	// The veth pair's own /30, outside PodCIDR: inside the namespace all of
	// PodCIDR is local, so the host's side must not be in it.
	linkHostAddr = "10.243.0.1/30"
	linkPodAddr  = "10.243.0.2/30"
	linkPodIP    = "10.243.0.2"
	// probePodIP is an address of PodCIDR kwok reaches last, used to check
	// the stand-in from outside the namespace.
	probePodIP = "10.244.255.254"

	procStandin = "pod-standin"
)

// StandinPorts are the ports the stand-in listens on at every pod IP: the
// ports of the notebook and inference templates (deploy/templates).
var StandinPorts = []int{8888, 8000}

// podNetwork names one stack's namespace and veth ends, derived from its
// state folder so a stack in CI (inside a namespace of its own) and a
// developer's stack beside it never share them.
type podNetwork struct {
	Namespace string
	HostLink  string
	PodLink   string
}

func (s *Stack) podNetwork() podNetwork {
	// A worktree whose .local links to another checkout's is that stack.
	local := s.layout.Local()
	if real, err := filepath.EvalSymlinks(local); err == nil {
		local = real
	}
	sum := sha256.Sum256([]byte(local))
	id := hex.EncodeToString(sum[:])[:8]
	return podNetwork{Namespace: "gantry-pods-" + id, HostLink: "gph" + id, PodLink: "gpp" + id}
}

// podNetworkSupported reports whether this stack may create network
// namespaces (root only); without it pods have IPs nothing answers at.
func podNetworkSupported() error {
	if os.Geteuid() != 0 {
		return errors.New("creating the pod network namespace needs root: notebooks and endpoints cannot be opened from the portal on this stack")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return errors.New("the `ip` command (iproute2) is missing: notebooks and endpoints cannot be opened from the portal on this stack")
	}
	return nil
}

func podNetworkComponent() component {
	return component{
		name:      "pod network + stand-in",
		group:     GroupCluster,
		processes: []string{procStandin},
		healthy: func(ctx context.Context, s *Stack) error {
			if podNetworkSupported() != nil {
				return nil // nothing to run; start would only say why
			}
			if _, err := s.process(procStandin); err != nil {
				return err
			}
			// Without the route into the namespace, a probe of a pod IP
			// would leave the machine: check the link first.
			if err := s.podNetworkPresent(); err != nil {
				return err
			}
			return standinAnswers(ctx)
		},
		start: startPodNetwork,
	}
}

// podNetworkPresent checks that the namespace and the host's veth end exist.
func (s *Stack) podNetworkPresent() error {
	n := s.podNetwork()
	if _, err := os.Stat(filepath.Join("/var/run/netns", n.Namespace)); err != nil {
		return fmt.Errorf("pod network namespace %s is missing", n.Namespace)
	}
	if _, err := os.Stat(filepath.Join("/sys/class/net", n.HostLink)); err != nil {
		return fmt.Errorf("pod network link %s is missing", n.HostLink)
	}
	return nil
}

// standinAnswers checks the stand-in through the route into the namespace.
func standinAnswers(ctx context.Context) error {
	for _, p := range StandinPorts {
		if err := httpOK(ctx, fmt.Sprintf("http://%s:%d/health", probePodIP, p)); err != nil {
			return err
		}
	}
	return nil
}

func startPodNetwork(ctx context.Context, s *Stack) error {
	if err := podNetworkSupported(); err != nil {
		s.progress("  ! %s", err)
		return nil
	}
	n := s.podNetwork()
	// A namespace left by an earlier run may hold a dead stand-in's state:
	// start from nothing.
	if err := s.removePodNetwork(ctx); err != nil {
		return err
	}
	// Only one stack runs per network namespace (its ports are fixed), so
	// a route into PodCIDR left here is an earlier stack's: take it away.
	if err := removeStalePodRoute(ctx); err != nil {
		return err
	}
	steps := [][]string{
		{"netns", "add", n.Namespace},
		{"-n", n.Namespace, "link", "set", "lo", "up"},
		{"link", "add", n.HostLink, "type", "veth", "peer", "name", n.PodLink, "netns", n.Namespace},
		{"addr", "add", linkHostAddr, "dev", n.HostLink},
		{"link", "set", n.HostLink, "up"},
		{"-n", n.Namespace, "addr", "add", linkPodAddr, "dev", n.PodLink},
		{"-n", n.Namespace, "link", "set", n.PodLink, "up"},
		// Every pod IP is this namespace's own: one server answers them all.
		{"-n", n.Namespace, "route", "add", "local", PodCIDR, "dev", "lo"},
		{"route", "add", PodCIDR, "via", linkPodIP, "dev", n.HostLink},
	}
	for _, args := range steps {
		if err := ipCommand(ctx, args...); err != nil {
			_ = s.removePodNetwork(context.WithoutCancel(ctx))
			return err
		}
	}
	bin, err := s.buildGantryDev(ctx)
	if err != nil {
		return err
	}
	listen := make([]string, 0, len(StandinPorts))
	for _, p := range StandinPorts {
		listen = append(listen, "0.0.0.0:"+strconv.Itoa(p))
	}
	ps, err := s.run(Process{
		Name: procStandin,
		Path: "ip",
		Args: []string{"netns", "exec", n.Namespace, bin, "standin", "--listen=" + strings.Join(listen, ",")},
	})
	if err != nil {
		return err
	}
	return waitFor(ctx, "stand-in answering at pod IPs", 30*time.Second, ps, standinAnswers)
}

// buildGantryDev builds this repository's gantry-dev (the stand-in is its
// `standin` command) into .local/bin: `go run` and test binaries are not
// a program the stack can start.
func (s *Stack) buildGantryDev(ctx context.Context) (string, error) {
	bin := filepath.Join(s.layout.Local(), "bin", "gantry-dev")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/gantry-dev")
	// The source is the checkout deploy/ belongs to (a test's scratch
	// stack links the repository's deploy/ and has no source of its own).
	cmd.Dir = s.layout.Root
	if real, err := filepath.EvalSymlinks(s.layout.Deploy()); err == nil {
		cmd.Dir = filepath.Dir(real)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build gantry-dev for the stand-in: %w\n%s", err, out)
	}
	return bin, nil
}

// removePodNetwork deletes the stack's namespace and its host veth end
// (the pair goes with it); what is already gone is fine.
func (s *Stack) removePodNetwork(ctx context.Context) error {
	if podNetworkSupported() != nil {
		return nil
	}
	n := s.podNetwork()
	_ = ipCommand(ctx, "link", "del", n.HostLink)
	if _, err := os.Stat(filepath.Join("/var/run/netns", n.Namespace)); err == nil {
		if err := ipCommand(ctx, "netns", "del", n.Namespace); err != nil {
			return err
		}
	}
	return nil
}

// removeStalePodRoute deletes a route into PodCIDR through another pod
// network's veth (and that network), as a stack that died without `down`
// leaves it.
func removeStalePodRoute(ctx context.Context) error {
	out, err := exec.CommandContext(ctx, "ip", "route", "show", PodCIDR).Output()
	if err != nil {
		return fmt.Errorf("ip route show %s: %w", PodCIDR, err)
	}
	f := strings.Fields(string(out))
	for i := 0; i+1 < len(f); i++ {
		if f[i] != "dev" || !strings.HasPrefix(f[i+1], "gph") {
			continue
		}
		link := strings.TrimSuffix(f[i+1], "@")
		if err := ipCommand(ctx, "link", "del", link); err != nil {
			return err
		}
		ns := "gantry-pods-" + strings.TrimPrefix(link, "gph")
		if _, err := os.Stat(filepath.Join("/var/run/netns", ns)); err == nil {
			_ = ipCommand(ctx, "netns", "del", ns)
		}
	}
	return nil
}

func ipCommand(ctx context.Context, args ...string) error {
	out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// StandinURL is the stand-in's address at a pod IP, for tests and benchmarks
// that call it without the portal.
func StandinURL(podIP string, port int) string {
	return fmt.Sprintf("http://%s:%d", podIP, port)
}
