package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/gantry-dev/gantry/internal/config"
	"github.com/gantry-dev/gantry/internal/kube"
	"github.com/gantry-dev/gantry/internal/leader"
	"github.com/gantry-dev/gantry/internal/notify"
	"github.com/gantry-dev/gantry/internal/queue"
	"github.com/gantry-dev/gantry/internal/store"
)

// Attempts are recorded as the job cache sees them and written every
// attemptsFlush; webhook deliveries are looked for every webhooksPoll.
const (
	attemptsFlush = time.Second
	webhooksPoll  = 2 * time.Second
)

// startAttempts adds the leader loops that record every job's attempts
// (and notify owners and team webhooks of endings) and post webhook
// deliveries.
func startAttempts(cfg config.Config, cache *kube.Cache, jobs *kube.JobCache, db *store.Store, loops *leader.Loops, log *slog.Logger) {
	rec := &queue.AttemptRecorder{Store: db, Objects: jobs, Reader: queue.StatusReader{Queues: cache, Workloads: jobs},
		PublicURL: cfg.PublicURL, Log: log}
	loops.Add("job-attempts", func(ctx context.Context) { rec.Run(ctx, attemptsFlush) })
	d := &notify.Deliverer{Store: db, Log: log}
	loops.Add("team-webhooks", func(ctx context.Context) { d.Run(ctx, webhooksPoll) })
}
