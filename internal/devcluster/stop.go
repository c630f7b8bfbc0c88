package devcluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Stop stops the processes of one group (GroupPostgres, …) the way the
// program shuts itself down (PostgreSQL: a fast shutdown, as `pg_ctl stop
// -m fast` does) and leaves the rest of the stack running; Up with the same
// group starts them again. Fault tests use it to take one part away from
// a running portal.
func (s *Stack) Stop(ctx context.Context, group string) error {
	if !slices.Contains(allGroups, group) {
		return fmt.Errorf("unknown part %q (known: %s)", group, strings.Join(allGroups, ", "))
	}
	unlock, err := s.lockState(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	cs := s.components()
	var errs []string
	for i := len(cs) - 1; i >= 0; i-- {
		c := cs[i]
		if c.group != group {
			continue
		}
		for _, name := range slices.Backward(c.processes) {
			if _, ok := s.state.Processes[name]; !ok {
				continue
			}
			if err := s.stopRecorded(ctx, name, c.shutdown, 30*time.Second); err != nil {
				errs = append(errs, err.Error())
			}
		}
	}
	if err := writeState(s.layout, s.state); err != nil {
		return err
	}
	if len(errs) > 0 {
		return fmt.Errorf("stop %s: %s", group, strings.Join(errs, "; "))
	}
	return nil
}
