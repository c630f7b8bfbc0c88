package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/gantry-dev/gantry/internal/devcluster"
	"github.com/gantry-dev/gantry/internal/devcluster/simworkload"
)

// startSimulator makes the simulated acceptance pods of every team report
// like a real workload for as long as `make run` runs. GANTRY_SIM_GAP (time
// between reports, default 1s) and GANTRY_SIM_RESUME_DELAY (a replacement
// pod's start to "resumed", default 1.5s) set its pace.
func startSimulator(ctx context.Context, l devcluster.Layout) error {
	cfg, err := devcluster.RESTConfig(l)
	if err != nil {
		return err
	}
	t := simworkload.DefaultTimings()
	for _, e := range []struct {
		name string
		into *time.Duration
	}{{"GANTRY_SIM_GAP", &t.Gap}, {"GANTRY_SIM_RESUME_DELAY", &t.ResumeDelay}} {
		if v := os.Getenv(e.name); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return fmt.Errorf("%s=%q: want a positive duration such as 2s", e.name, v)
			}
			*e.into = d
		}
	}
	sim := &simworkload.Simulator{Config: cfg, Dir: filepath.Join(l.Local(), "simworkload"), Figures: simworkload.DefaultFigures(), Timings: t}
	go func() {
		if err := sim.Run(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "gantry-dev: simulated acceptance workloads:", err)
		}
	}()
	return nil
}
