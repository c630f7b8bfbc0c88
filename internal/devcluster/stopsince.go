package devcluster

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"syscall"
	"time"
)

// Running returns the PIDs of the stack's processes that run now, so a
// caller can later stop only what it started itself (see StopNewerThan).
func (s *Stack) Running() (map[string]int, error) {
	st, err := ReadState(s.layout)
	if err != nil {
		return nil, err
	}
	running := map[string]int{}
	for name, ps := range st.Processes {
		if ps.alive() {
			running[name] = ps.PID
		}
	}
	return running, nil
}

// StopNewerThan stops the stack's processes that were not running (with
// the same PID) in before, newest first, leaving the rest alone; a nil
// before stops them all.
func (s *Stack) StopNewerThan(ctx context.Context, before map[string]int) error {
	unlock, err := s.lockState(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	var errs []string
	for _, name := range s.byAge() {
		ps := s.state.Processes[name]
		if pid, ok := before[name]; ok && pid == ps.PID {
			continue
		}
		if err := s.stopRecorded(ctx, name, 0, 15*time.Second); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if err := writeState(s.layout, s.state); err != nil {
		return err
	}
	if len(errs) > 0 {
		return fmt.Errorf("stop stack: %s", strings.Join(errs, "; "))
	}
	return nil
}

// lockState takes the stack's lock and reads its state; call unlock when done.
func (s *Stack) lockState(ctx context.Context) (unlock func(), err error) {
	if unlock, err = lock(ctx, s.layout); err != nil {
		return nil, err
	}
	if s.state, err = ReadState(s.layout); err != nil {
		unlock()
		return nil, err
	}
	return unlock, nil
}

// stopRecorded stops the recorded process name (asking with sig, see
// shutDownProcess) and forgets it.
func (s *Stack) stopRecorded(ctx context.Context, name string, sig syscall.Signal, grace time.Duration) error {
	ps := s.state.Processes[name]
	was := ps.alive()
	if err := shutDownProcess(ctx, name, ps, sig, grace); err != nil {
		return err
	}
	if was {
		s.progress("  ✓ stopped %s (pid %d)", name, ps.PID)
	}
	delete(s.state.Processes, name)
	// The pod network lives as long as the stand-in inside it.
	if name == procStandin {
		return s.removePodNetwork(ctx)
	}
	return nil
}

// byAge lists recorded process names, newest first.
func (s *Stack) byAge() []string {
	names := make([]string, 0, len(s.state.Processes))
	for n := range s.state.Processes {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		return s.state.Processes[names[i]].StartedAt.After(s.state.Processes[names[j]].StartedAt)
	})
	return names
}
