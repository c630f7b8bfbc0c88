package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gantry-dev/gantry/internal/audit"
	"github.com/gantry-dev/gantry/internal/kube"
	"github.com/gantry-dev/gantry/internal/proxy"
	"github.com/gantry-dev/gantry/internal/store"
	"github.com/gantry-dev/gantry/internal/web"
)

// usageFlushInterval is how often each replica adds the endpoint calls it
// counted to the hourly rows in Postgres.
const usageFlushInterval = 15 * time.Second

// startProxy wires opening notebooks and calling endpoints through the
// portal: the EndpointSlice cache the proxies pick addresses from, access
// (shares, keys) and endpoint usage, flushed by every replica (each counts
// the calls it served).
func startProxy(ctx context.Context, clients *kube.Clients, db *store.Store, auditLog *audit.Log, reg prometheus.Registerer, log *slog.Logger) (*web.ProxyDeps, error) {
	eps, err := kube.NewEndpointCache(clients.Kube, 0)
	if err != nil {
		return nil, err
	}
	eps.Start(ctx)
	syncCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := eps.WaitForSync(syncCtx); err != nil {
		log.Warn("endpoint cache not synced yet", "err", err)
	}
	usage, err := proxy.NewUsage(reg, db, nil)
	if err != nil {
		return nil, err
	}
	go usage.Run(ctx, usageFlushInterval, log)
	return &web.ProxyDeps{Access: proxy.NewAccess(db, auditLog, nil), Usage: usage, Endpoints: eps}, nil
}
