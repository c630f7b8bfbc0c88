package devcluster

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Stack supervises the local stack's processes.
type Stack struct {
	layout Layout
	out    io.Writer
	state  State
	// started lists the processes this Up started, so a failed Up can
	// clean up after itself without touching what it merely reused.
	started []string
	// bins is the folder of the pinned cluster binaries, set by the
	// binaries step.
	bins string
	// tamper, set by tests only, changes a process before it starts (a bad
	// flag, a missing binary) to prove a failed start leaves nothing behind.
	tamper func(*Process)
}

// component is one step of bringing the stack up. Steps run in order; a
// step whose healthy check passes is reused instead of restarted.
type component struct {
	name string
	// group selects components with `up --only <group>`.
	group string
	// processes are the names of the processes the step starts.
	processes []string
	// ports are the loopback ports those processes listen on: they must
	// be free before the step starts them.
	ports   []int
	healthy func(ctx context.Context, s *Stack) error
	start   func(ctx context.Context, s *Stack) error
	// shutdown is the signal that asks the step's program for its own
	// orderly shutdown, sent to that process alone; zero means SIGTERM to
	// its process group.
	shutdown syscall.Signal
}

// Groups that `--only` accepts.
const (
	GroupPostgres   = "postgres"
	GroupIdP        = "idp"
	GroupCluster    = "cluster"
	GroupPrometheus = "prometheus"
)

// AllGroups is the whole stack.
var allGroups = []string{GroupPostgres, GroupIdP, GroupCluster, GroupPrometheus}

// AllGroups returns every group, in start order.
func AllGroups() []string { return slices.Clone(allGroups) }

// New returns a stack rooted at the repository found above dir, printing
// progress to out.
func New(dir string, out io.Writer) (*Stack, error) {
	l, err := FindLayout(dir)
	if err != nil {
		return nil, err
	}
	return &Stack{layout: l, out: out}, nil
}

// Layout returns the stack's file layout.
func (s *Stack) Layout() Layout { return s.layout }

func (s *Stack) components() []component {
	cs := []component{postgresComponent(), idpComponent()}
	cs = append(cs, clusterComponents()...)
	return cs
}

func (s *Stack) progress(format string, args ...any) {
	fmt.Fprintf(s.out, format+"\n", args...)
}

// Up brings up the selected groups (all when none are named), reusing
// healthy parts. On failure it stops what this call started.
func (s *Stack) Up(ctx context.Context, groups ...string) (State, error) {
	if len(groups) == 0 {
		groups = AllGroups()
	}
	for _, g := range groups {
		if !slices.Contains(allGroups, g) {
			return State{}, fmt.Errorf("unknown part %q (known: %s)", g, strings.Join(allGroups, ", "))
		}
	}
	if err := s.layout.ensureDirs(); err != nil {
		return State{}, err
	}
	unlock, err := lock(ctx, s.layout)
	if err != nil {
		return State{}, err
	}
	defer unlock()
	if s.state, err = ReadState(s.layout); err != nil {
		return State{}, err
	}
	s.started = nil
	begin := time.Now()
	for _, c := range s.components() {
		if !slices.Contains(groups, c.group) {
			continue
		}
		if c.healthy != nil && c.healthy(ctx, s) == nil {
			s.progress("  ✓ %-22s reusing", c.name)
			continue
		}
		for _, p := range c.processes {
			if ps, ok := s.state.Processes[p]; ok {
				_ = stopProcess(ctx, p, ps, 10*time.Second)
				delete(s.state.Processes, p)
			}
		}
		s.progress("  … %-22s starting", c.name)
		t0 := time.Now()
		err := portsFree(c.ports)
		if err == nil {
			err = c.start(ctx, s)
		}
		if err != nil {
			s.progress("  ✗ %-22s failed: %v", c.name, err)
			s.cleanupStarted(context.WithoutCancel(ctx))
			return s.state, fmt.Errorf("bring up %s: %w", c.name, err)
		}
		if err := writeState(s.layout, s.state); err != nil {
			s.cleanupStarted(context.WithoutCancel(ctx))
			return s.state, err
		}
		s.progress("  ✓ %-22s ready in %s", c.name, time.Since(t0).Round(100*time.Millisecond))
	}
	s.progress("local stack up in %s", time.Since(begin).Round(100*time.Millisecond))
	return s.state, nil
}

// cleanupStarted stops what the current Up started, newest first.
func (s *Stack) cleanupStarted(ctx context.Context) {
	for i := len(s.started) - 1; i >= 0; i-- {
		name := s.started[i]
		if ps, ok := s.state.Processes[name]; ok {
			if err := stopProcess(ctx, name, ps, 10*time.Second); err != nil {
				s.progress("  ! %s", err)
			}
			delete(s.state.Processes, name)
			if name == procStandin {
				if err := s.removePodNetwork(ctx); err != nil {
					s.progress("  ! %s", err)
				}
			}
		}
	}
	s.started = nil
	if err := writeState(s.layout, s.state); err != nil {
		s.progress("  ! %s", err)
	}
}

// run starts a process and records it in the state.
func (s *Stack) run(p Process) (*ProcessState, error) {
	ps, err := s.startProcess(p)
	if err != nil {
		return nil, err
	}
	s.state.Processes[p.Name] = ps
	s.started = append(s.started, p.Name)
	if err := writeState(s.layout, s.state); err != nil {
		return nil, err
	}
	return &ps, nil
}

// process returns the recorded state of a running process.
func (s *Stack) process(name string) (ProcessState, error) {
	ps, ok := s.state.Processes[name]
	if !ok || !ps.alive() {
		return ProcessState{}, fmt.Errorf("%s: %w", name, errNotRunning)
	}
	return ps, nil
}

// Down stops every process the stack started (and nothing else), newest
// first.
func (s *Stack) Down(ctx context.Context) error {
	if err := s.StopNewerThan(ctx, nil); err != nil {
		return err
	}
	// A stand-in that died unrecorded may have left its namespace behind.
	return s.removePodNetwork(ctx)
}

// Status prints each part's health and returns an error when any
// recorded process is not running.
func (s *Stack) Status(ctx context.Context) error {
	st, err := ReadState(s.layout)
	if err != nil {
		return err
	}
	s.state = st
	var bad []string
	for _, c := range s.components() {
		if c.healthy == nil {
			continue
		}
		if err := c.healthy(ctx, s); err != nil {
			s.progress("  ✗ %-22s %v", c.name, err)
			bad = append(bad, c.name)
			continue
		}
		s.progress("  ✓ %-22s healthy", c.name)
	}
	for _, line := range []struct{ k, v string }{
		{"kubeconfig", st.Kubeconfig}, {"API server", st.APIServerURL}, {"PostgreSQL", st.PostgresURL},
		{"Prometheus", st.PrometheusURL}, {"OIDC issuer", st.IssuerURL},
	} {
		if line.v != "" {
			s.progress("  %-12s %s", line.k, line.v)
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("not healthy: %s", strings.Join(bad, ", "))
	}
	return nil
}
