package main

import (
	"context"
	"log/slog"

	"github.com/gantry-dev/gantry/internal/audit"
	"github.com/gantry-dev/gantry/internal/config"
	"github.com/gantry-dev/gantry/internal/kube"
	"github.com/gantry-dev/gantry/internal/leader"
	"github.com/gantry-dev/gantry/internal/naming"
	"github.com/gantry-dev/gantry/internal/quota"
	"github.com/gantry-dev/gantry/internal/store"
	"github.com/gantry-dev/gantry/internal/teams"
	"github.com/gantry-dev/gantry/internal/teams/teamadmin"
	"github.com/gantry-dev/gantry/internal/web"
)

// startQuota wires quota requests, team administration and the grant
// expiry loop. The loop runs on the leading replica (loops); each grant is
// also reverted in its own transaction with its row locked (FOR UPDATE SKIP
// LOCKED), so even overlapping leaders never revert a grant twice.
// Wait times come from the job cache's Workload informer (started by run);
// they fill in once it has listed, pages do not block on it.
func startQuota(ctx context.Context, cfg config.Config, clients *kube.Clients, cache *kube.Cache, nodes *kube.NodeCache, waits *kube.JobCache, db *store.Store, auditLog *audit.Log, loops *leader.Loops, log *slog.Logger) (*web.QuotaDeps, error) {
	service := quota.NewService(db, &quota.ClusterQueues{Kueue: clients.Kueue, Kube: clients.Kube}, auditLog, log)
	loops.Add("quota-expiry", func(ctx context.Context) { service.Run(ctx, cfg.QuotaExpiryInterval) })

	// The chart runs the portal's pods in the system namespace (its default:
	// the release namespace); team NetworkPolicies admit them from there.
	prov, err := teams.NewProvisioner(clients.Config, naming.FieldManager,
		teams.WithAdminGroups(cfg.AdminGroups), teams.WithPortalNamespace(cfg.SystemNamespace),
		teams.WithIdentities(cfg.Identities))
	if err != nil {
		return nil, err
	}
	flavors := func() ([]teams.Flavor, error) {
		return teams.FlavorsOf(cache.ResourceFlavors(), nodes.FlavorCapacity)
	}
	return &web.QuotaDeps{
		Workflow: service,
		Board:    quota.NewBoard(cache, nodes.FlavorCapacity, waits),
		Store:    db,
		Teams:    teamadmin.New(db, prov, flavors, cfg.Cohort, auditLog, nil),
	}, nil
}
