package main

import (
	"context"
	"log/slog"

	"github.com/gantry-dev/gantry/internal/audit"
	"github.com/gantry-dev/gantry/internal/config"
	"github.com/gantry-dev/gantry/internal/gpu"
	"github.com/gantry-dev/gantry/internal/kube"
	"github.com/gantry-dev/gantry/internal/launch"
	"github.com/gantry-dev/gantry/internal/leader"
	"github.com/gantry-dev/gantry/internal/reclaim"
	"github.com/gantry-dev/gantry/internal/store"
)

// startIdleReclaim wires the idle GPU reclaim: the pages always (policies,
// holds), the loop on the leading replica when it is enabled and
// Prometheus is configured (no GPU evidence, no reclaim).
func startIdleReclaim(cfg config.Config, clients *kube.Clients, jobs *kube.JobCache, db *store.Store, records *launch.KeptRecords,
	changes *store.Changes, launcher *launch.Service, auditLog *audit.Log, loops *leader.Loops, log *slog.Logger) (*reclaim.Reclaimer, error) {
	ir := cfg.IdleReclaim
	r := &reclaim.Reclaimer{
		Settings: reclaim.Settings{Interval: ir.Interval, Threshold: ir.Threshold, Window: ir.Window, Grace: ir.Grace,
			Extension: ir.Extension, MinWindow: ir.MinWindow, MaxWindow: ir.MaxWindow, MaxExtension: ir.MaxExtension},
		Store: idleStore{Store: db, records: records}, Teams: db, Jobs: jobs, Scaler: reclaim.KubeScaler{Client: clients.Kube}, Templates: launcher,
		Audit: auditLog, Log: log, KeptPolicies: store.NewKept[[]store.IdlePolicy](changes, store.TopicIdlePolicies),
		KeptHolds: store.NewKept[map[string]store.IdleHold](changes, store.TopicIdleHolds),
	}
	if err := r.Settings.Validate(); err != nil {
		return nil, err
	}
	if !ir.Enabled || cfg.PrometheusURL == "" {
		log.Info("idle reclaim loop off", "enabled", ir.Enabled, "prometheus", cfg.PrometheusURL != "")
		return r, nil
	}
	m, err := gpu.New(cfg.PrometheusURL, gpu.WithIdleNowWindow(cfg.IdleReclaim.NowWindow))
	if err != nil {
		return nil, err
	}
	r.Metrics = m
	loops.Add("idle-reclaim", func(ctx context.Context) {
		if err := jobs.WaitForSync(ctx); err != nil {
			return
		}
		r.Run(ctx)
	})
	return r, nil
}

// idleStore is the database as the idle loop reads it, with the live
// launches it lists on each pass read from the kept launch records.
type idleStore struct {
	*store.Store
	records *launch.KeptRecords
}

func (s idleStore) LiveLaunches(ctx context.Context) ([]store.Launch, error) {
	return s.records.LiveLaunches(ctx)
}
