package devcluster

import (
	"context"
	"fmt"
	"time"
)

// ProcessAPIServer names the API server among the stack's processes, for
// StopProcess.
const ProcessAPIServer = procAPIServer

// StopProcess stops one running process of the stack (SIGTERM, then
// SIGKILL after grace) and leaves the others running, even those of its
// group (Stop stops a whole group); Up of its group starts it again and
// reuses the rest. Fault tests take the API server away this way.
func (s *Stack) StopProcess(ctx context.Context, name string, grace time.Duration) error {
	unlock, err := lock(ctx, s.layout)
	if err != nil {
		return err
	}
	defer unlock()
	if s.state, err = ReadState(s.layout); err != nil {
		return err
	}
	ps, ok := s.state.Processes[name]
	if !ok || !ps.alive() {
		return fmt.Errorf("stop %s: %w", name, errNotRunning)
	}
	if err := stopProcess(ctx, name, ps, grace); err != nil {
		return err
	}
	s.progress("  ✓ stopped %s (pid %d)", name, ps.PID)
	delete(s.state.Processes, name)
	return writeState(s.layout, s.state)
}
