package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/gantry-dev/gantry/internal/acceptance"
	"github.com/gantry-dev/gantry/internal/audit"
	"github.com/gantry-dev/gantry/internal/config"
	"github.com/gantry-dev/gantry/internal/gpu"
	"github.com/gantry-dev/gantry/internal/kube"
	"github.com/gantry-dev/gantry/internal/launch"
	"github.com/gantry-dev/gantry/internal/leader"
	"github.com/gantry-dev/gantry/internal/store"
)

// startAcceptance seeds the local pools' acceptance definitions (an
// acceptance.yaml beside the teams file) and puts the acceptance runner on
// the leader's loops; it returns the service the pages and the API call.
func startAcceptance(ctx context.Context, cfg config.Config, db *store.Store, launcher *launch.Service, jobs *kube.JobCache,
	logs *kube.PodLogs, auditLog *audit.Log, loops *leader.Loops, log *slog.Logger) (*acceptance.Service, error) {
	if cfg.SeedTeams != "" {
		file := filepath.Join(filepath.Dir(cfg.SeedTeams), "acceptance.yaml")
		if _, err := os.Stat(file); err == nil {
			n, err := acceptance.SeedDefinitions(ctx, db, file)
			if err != nil {
				return nil, err
			}
			log.Info("acceptance definitions seeded", "file", file, "definitions", n)
		}
	}
	runner := &acceptance.Runner{
		Store: db, Launcher: launcher, Cluster: jobs, Logs: logs, Base: launcher.Base, Identities: cfg.Identities,
		Audit: auditLog, Log: log, StepTimeout: cfg.AcceptanceStepTimeout,
	}
	if cfg.PrometheusURL != "" {
		m, err := gpu.New(cfg.PrometheusURL)
		if err != nil {
			return nil, err
		}
		runner.GPU = m
	}
	loops.Add("acceptance-runs", func(ctx context.Context) {
		syncCtx, cancel := context.WithTimeout(ctx, time.Minute)
		err := jobs.WaitForSync(syncCtx)
		cancel()
		if err != nil && !errors.Is(ctx.Err(), context.Canceled) {
			log.Warn("acceptance runs: job cache not synced yet", "err", err)
		}
		runner.Run(ctx, cfg.AcceptanceInterval)
	})
	return &acceptance.Service{Store: db, Audit: auditLog}, nil
}
