package stacktest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/gantry-dev/gantry/internal/devcluster"
)

// RestartAPIServer stops the stack's kube-apiserver (SIGTERM, and SIGKILL
// after a second: its graceful shutdown drains requests for up to 15 s while
// refusing new connections), calls during while it is down, starts it again
// and returns when it answered /readyz again. The
// other components keep running and reconnect on their own. The API server
// is brought back even when during fails the test, because the tests after
// it share the stack.
func (e *Env) RestartAPIServer(t testing.TB, during func()) (readyAt time.Time) {
	t.Helper()
	s, err := devcluster.New(e.Layout.Root, testWriter{t})
	if err != nil {
		t.Fatalf("stacktest: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var once sync.Once
	restore := func() {
		once.Do(func() { readyAt = e.bringBackAPIServer(t, s) })
	}
	t.Cleanup(restore)
	if err := s.StopProcess(ctx, devcluster.ProcessAPIServer, time.Second); err != nil {
		t.Fatalf("stacktest: %v", err)
	}
	during()
	restore()
	return readyAt
}

// bringBackAPIServer brings the cluster group up again (only what is not
// running starts) and returns the first moment /readyz answered, which is
// before Up returns: Up also checks the components that follow.
func (e *Env) bringBackAPIServer(t testing.TB, s *devcluster.Stack) time.Time {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := s.Up(ctx, devcluster.GroupCluster)
		done <- err
	}()
	var readyAt time.Time
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			if err != nil {
				dumpLogs(t, e.Layout)
				t.Errorf("stacktest: bring the API server back: %v", err)
			}
			if readyAt.IsZero() {
				readyAt = time.Now()
			}
			return readyAt
		case <-tick.C:
			if !readyAt.IsZero() {
				continue
			}
			pctx, pcancel := context.WithTimeout(ctx, time.Second)
			if e.Kube.Discovery().RESTClient().Get().AbsPath("/readyz").Do(pctx).Error() == nil {
				readyAt = time.Now()
			}
			pcancel()
		}
	}
}
