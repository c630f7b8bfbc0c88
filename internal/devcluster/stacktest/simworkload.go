package stacktest

import (
	"context"
	"testing"

	"github.com/gantry-dev/gantry/internal/devcluster/simworkload"
)

// SimulateWorkloads makes the acceptance pods of namespace report like a
// real workload (simworkload), with these figures and timings, until the
// test ends; their log lines are served by kwok through pods/log.
func (e *Env) SimulateWorkloads(t testing.TB, namespace string, f simworkload.Figures, tm simworkload.Timings) {
	t.Helper()
	sim := &simworkload.Simulator{Config: e.RESTConfig, Dir: t.TempDir(), Namespace: namespace, Figures: f, Timings: tm}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := sim.Run(ctx); err != nil {
			t.Errorf("stacktest: simulated workloads: %v", err)
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}
