package stacktest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/gantry-dev/gantry/internal/devcluster"
)

// Stop stops one part of the running stack (devcluster.GroupPostgres, …)
// the way the program shuts itself down, and returns start, which brings
// it up again and returns once it is healthy. Later tests share the stack,
// so the part is started again when the test ends even if it fails first.
func (e *Env) Stop(t testing.TB, group string) (start func() error) {
	t.Helper()
	s, err := devcluster.New(e.Layout.Root, testWriter{t})
	if err != nil {
		t.Fatalf("stacktest: %v", err)
	}
	var once sync.Once
	var startErr error
	start = func() error {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			_, startErr = s.Up(ctx, group)
		})
		return startErr
	}
	t.Cleanup(func() {
		if err := start(); err != nil {
			t.Errorf("stacktest: start %s again: %v", group, err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.Stop(ctx, group); err != nil {
		t.Fatalf("stacktest: %v", err)
	}
	return start
}
