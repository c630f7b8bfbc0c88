package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/gantry-dev/gantry/internal/audit"
	"github.com/gantry-dev/gantry/internal/config"
	"github.com/gantry-dev/gantry/internal/cost"
	"github.com/gantry-dev/gantry/internal/gpu"
	"github.com/gantry-dev/gantry/internal/kube"
	"github.com/gantry-dev/gantry/internal/leader"
	"github.com/gantry-dev/gantry/internal/queue"
	"github.com/gantry-dev/gantry/internal/store"
	"github.com/gantry-dev/gantry/internal/web"
)

// startNodeCache starts the one Node informer the quota board and the
// cluster page share.
func startNodeCache(ctx context.Context, clients *kube.Clients, log *slog.Logger) *kube.NodeCache {
	nodes := kube.NewNodeCache(clients.Kube, 0)
	nodes.Start(ctx)
	syncCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := nodes.WaitForSync(syncCtx); err != nil {
		log.Warn("node cache not synced yet", "err", err)
	}
	return nodes
}

// positionsTTL is how old a LocalQueue's pending positions on a job page may be.
const positionsTTL = 2 * time.Second

// startStatus wires queue, GPU and cost status: prices seeded at start, the
// cost ledger loop on the leading replica, and eviction/deletion hooks on
// every replica. Ledger rows are keyed by workload UID and admission time
// and inserted with ON CONFLICT DO NOTHING, so replicas never double-count.
func startStatus(ctx context.Context, cfg config.Config, clients, informerClients *kube.Clients, cache *kube.Cache, jobs *kube.JobCache,
	nodes *kube.NodeCache, db *store.Store, loops *leader.Loops, log *slog.Logger) (*web.StatusDeps, error) {
	pricesFile := cfg.SeedPrices
	if pricesFile == "" && cfg.SeedTeams != "" {
		beside := filepath.Join(filepath.Dir(cfg.SeedTeams), "prices.yaml")
		if _, err := os.Stat(beside); err == nil {
			pricesFile = beside
		}
	}
	if pricesFile != "" {
		n, err := cost.SeedPrices(ctx, db, pricesFile)
		if err != nil {
			return nil, err
		}
		log.Info("prices seeded", "file", pricesFile, "prices", n)
	}
	// Events of team namespaces, for the job page's recent events; pages
	// show none until it has synced.
	events, err := kube.NewEventCache(informerClients.Kube, 0)
	if err != nil {
		return nil, err
	}
	events.Start(ctx)
	deps := &web.StatusDeps{
		Reader: queue.StatusReader{Queues: cache, Workloads: jobs, Events: events, Kept: &queue.KeptQueues{},
			Positions: &queue.CachedPositions{Source: queue.VisibilityPositions{Client: clients.Kueue}, TTL: positionsTTL}},
		Jobs:  jobs,
		Costs: db,
		Pools: poolReader{cache, nodes},
	}
	ledger := &cost.Ledger{Store: db, Workloads: jobs, Causes: queue.LedgerCauses{Jobs: jobs}, Log: log}
	if cfg.PrometheusURL != "" {
		m, err := gpu.New(cfg.PrometheusURL, gpu.WithIdleNowWindow(cfg.IdleReclaim.NowWindow))
		if err != nil {
			return nil, err
		}
		deps.GPU, deps.GPUWait = m, cfg.PrometheusWait
		deps.Reader.Memory = m.ContainerMemoryPeak
		ledger.Utilization = m
	}
	if err := jobs.OnWorkloadChange(func(old, new *kueue.Workload) {
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		ledger.Observe(wctx, old, new)
	}); err != nil {
		return nil, err
	}
	loops.Add("cost-ledger", func(ctx context.Context) {
		syncCtx, cancel := context.WithTimeout(ctx, time.Minute)
		err := jobs.WaitForSync(syncCtx)
		cancel()
		if err != nil && !errors.Is(ctx.Err(), context.Canceled) {
			log.Warn("cost ledger: job cache not synced yet", "err", err)
		}
		ledger.Run(ctx, cfg.LedgerInterval)
	})
	return deps, nil
}

// poolReader joins the ResourceFlavors of the Kueue cache with the nodes
// of the Node cache.
type poolReader struct {
	*kube.Cache
	*kube.NodeCache
}

// accountingOf is cost per accepted unit over the database: verdicts, team
// rules, shared costs, the endpoint proxy's hourly counts and idle
// reclaim's episodes. The teams' rules are kept until changes announces
// a change; the teams' runs are kept and added to as runs are recorded.
func accountingOf(db *store.Store, changes *store.Changes, auditLog *audit.Log) *cost.Accounting {
	return &cost.Accounting{Store: db, Audit: auditLog,
		Endpoints: cost.StoreEndpointUsage{Hours: db}, Reclaims: cost.StoreReclaims{Episodes: db},
		KeptRules: store.NewKept[store.AcceptanceRule](changes, store.TopicAcceptanceRules),
		KeptRuns:  &cost.KeptRuns{Store: db}}
}
