// Command gantry is the Gantry portal server.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/gantry-dev/gantry/internal/audit"
	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/internal/catalog/catalogadmin"
	"github.com/gantry-dev/gantry/internal/config"
	"github.com/gantry-dev/gantry/internal/kube"
	"github.com/gantry-dev/gantry/internal/launch"
	"github.com/gantry-dev/gantry/internal/leader"
	"github.com/gantry-dev/gantry/internal/notify"
	"github.com/gantry-dev/gantry/internal/policy"
	"github.com/gantry-dev/gantry/internal/queue"
	"github.com/gantry-dev/gantry/internal/store"
	"github.com/gantry-dev/gantry/internal/web"
	"github.com/gantry-dev/gantry/static"
)

const shutdownTimeout = 20 * time.Second

func main() {
	cfg, err := config.Load(os.Args[1:], os.Getenv)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gantry:", err)
		os.Exit(2)
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	// The collector starts when the heap has grown by half of what is
	// live, not by all of it, or by 32 MiB if that is more
	// (go_gc_gogc_percent on /metrics says which).
	paced := paceCollector(os.LookupEnv)
	if paced {
		log.Info("collector paced at GOGC=50 or 32 MiB of growth, whichever is more; set GOGC to change it", "gc_percent", defaultGCPercent)
	}
	// The caches hold every Workload, Job and pod. In a
	// container with a memory limit the collector works to stay under what
	// the executable's mapped pages leave of it (GOMEMLIMIT, when set,
	// wins); elsewhere nothing changes. Not all of those pages are resident
	// (60-62 of 75 MiB in the load run), which is the slack.
	if _, err := memlimit.Set(memlimit.WithLogger(log), memlimit.WithRatio(1),
		memlimit.WithProvider(lessExecutable(memlimit.FromCgroup, executableMapped))); err != nil {
		log.Warn("memory limit of the container not read; the heap may grow past it", "err", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if paced {
		go pace(ctx, log)
	}
	if err := run(ctx, cfg, log); err != nil {
		log.Error("gantry stopped", "err", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, cfg config.Config, log *slog.Logger) error {
	db, err := store.OpenWith(ctx, cfg.DatabaseURL, cfg.DatabaseMaxConns)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := store.Migrate(ctx, db.SQL(), log); err != nil {
		return err
	}
	// Each replica hears of changed tables over a connection of its own.
	changes := store.NewChanges(cfg.DatabaseURL, log)
	db.KeepReads(changes)
	jobRows := db.KeepJobRows(changes, log)
	go changes.Run(ctx)
	go jobRows.Run(ctx)
	auditLog := audit.New(db, nil)
	if cfg.SeedTeams != "" {
		n, err := db.SeedTeamsFile(ctx, cfg.SeedTeams)
		if err != nil {
			return err
		}
		if err := auditLog.Record(ctx, audit.Event{Actor: audit.SystemActor, Action: audit.ActionTeamsSeeded, Target: cfg.SeedTeams,
			Detail: map[string]any{"teams": n}, Via: audit.ViaSystem}); err != nil {
			return err
		}
		log.Info("teams seeded", "file", cfg.SeedTeams, "teams", n)
	}

	if cfg.SeedTemplates != "" {
		n, err := launch.SeedTemplates(ctx, db, cfg.SeedTemplates)
		if err != nil {
			return err
		}
		if n > 0 {
			if err := auditLog.Record(ctx, audit.Event{Actor: audit.SystemActor, Action: launch.ActionTemplatesSeeded, Target: cfg.SeedTemplates,
				Detail: map[string]any{"new_versions": n}, Via: audit.ViaSystem}); err != nil {
				return err
			}
		}
		log.Info("templates seeded", "dir", cfg.SeedTemplates, "new_versions", n)
	}

	// The configured allowlist counts on the first start only; then the
	// admins' table is the truth.
	if seeded, err := db.SeedImageAllowlist(ctx, cfg.ImageRegistries, audit.SystemActor); err != nil {
		return err
	} else if seeded {
		if err := auditLog.Record(ctx, audit.Event{Actor: audit.SystemActor, Action: catalogadmin.ActionAllowlistUpdate, Target: "image-allowlist",
			Detail: map[string]any{"after": cfg.ImageRegistries, "seeded": true}, Via: audit.ViaSystem}); err != nil {
			return err
		}
	}

	oidcRP, err := discover(ctx, cfg, log)
	if err != nil {
		return err
	}

	ready := []web.ReadinessCheck{{Name: "database", Check: db.Ping}}
	var overviews web.TeamOverviews
	restCfg, err := kube.RESTConfig(cfg.Kubeconfig)
	if err != nil {
		return err
	}
	clients, err := kube.NewClients(restCfg)
	if err != nil {
		return err
	}
	// The informers' clients go through the contact, which knows when the
	// API server last answered (pages say so while it does not) and holds
	// their requests during an outage so they resume at once after it.
	probe, err := kube.ReadyzProbe(restCfg)
	if err != nil {
		return err
	}
	contact := kube.NewAPIServerContact(probe, log)
	go contact.Run(ctx)
	informerClients, err := kube.NewClients(contact.InformerConfig(restCfg))
	if err != nil {
		return err
	}
	catalogAdmin := &catalogadmin.Admin{Store: db, Audit: auditLog,
		Cluster: catalogadmin.ConfigMapAllowlist{Client: clients.Kube, Namespace: cfg.SystemNamespace}}
	// A fresh cluster gets the stored allowlist; a failed write on save is repaired.
	if err := catalogAdmin.SyncClusterAllowlist(ctx); err != nil {
		log.Warn("image allowlist not written to the cluster; kubectl is held to the previous one", "err", err)
	}
	cache, err := kube.NewCache(informerClients.Kueue, 0)
	if err != nil {
		return err
	}
	cache.Start(ctx)
	syncCtx, cancelSync := context.WithTimeout(ctx, 30*time.Second)
	if err := cache.WaitForSync(syncCtx); err != nil {
		// Pages say the cluster could not be read until the informers catch up.
		log.Warn("cluster cache not synced yet", "err", err)
	}
	cancelSync()
	overviews = queue.NewReader(cache)
	// Background loops run on the replica holding the leader Lease.
	loops := &leader.Loops{}
	nodes := startNodeCache(ctx, informerClients, log)
	// One informer per kind: the job cache's Workloads also give the quota
	// board its wait times.
	jobCache, err := kube.NewJobCache(informerClients.Kube, informerClients.Kueue, 0)
	if err != nil {
		return err
	}
	quotaDeps, err := startQuota(ctx, cfg, clients, cache, nodes, jobCache, db, auditLog, loops, log)
	if err != nil {
		return err
	}
	statusDeps, err := startStatus(ctx, cfg, clients, informerClients, cache, jobCache, nodes, db, loops, log)
	if err != nil {
		return err
	}
	statusDeps.Accounting = accountingOf(db, changes, auditLog)
	startAttempts(cfg, cache, jobCache, db, loops, log)
	jobCache.Start(ctx)
	// Job pages answer "not synced" until the job cache has listed once;
	// a just-launched job's page must not.
	syncCtx, cancelSync = context.WithTimeout(ctx, 30*time.Second)
	if err := jobCache.WaitForSync(syncCtx); err != nil {
		log.Warn("job cache not synced yet", "err", err)
	}
	cancelSync()
	// Launch records are kept in memory until the database announces a change.
	records := launch.NewKeptRecords(db, changes, log)
	go records.Run(ctx)
	// Launches create through clients.Config: their creates count towards
	// their Server-Timing, as the pages' reads do.
	launcher := &launch.Service{Base: clients.Config, Identities: cfg.Identities, Store: records, Queues: cache, Rules: policy.Rules{}, Allowlist: db, Audit: auditLog}
	jobReader := launch.Reader{Templates: db, Records: records, Jobs: jobCache}
	podLogs := &kube.PodLogs{Base: restCfg, Identities: cfg.Identities, Pods: jobCache}
	acceptanceRuns, err := startAcceptance(ctx, cfg, db, launcher, jobCache, podLogs, auditLog, loops, log)
	if err != nil {
		return err
	}
	idle, err := startIdleReclaim(cfg, clients, jobCache, db, records, changes, launcher, auditLog, loops, log)
	if err != nil {
		return err
	}
	ready = append(ready, web.APIServerCheck(clients.Kube.Discovery()))

	sessions := auth.NewSessionManager(db.SQL(), auth.SessionOptions{
		IdleTimeout:     cfg.SessionIdleTimeout,
		Lifetime:        cfg.SessionLifetime,
		Secure:          cfg.SecureCookies(),
		CleanupInterval: 5 * time.Minute,
		Changes:         changes,
		Log:             log,
	})
	registry := prometheus.NewRegistry()
	registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if err := db.Register(registry); err != nil {
		return err
	}
	le := cfg.LeaderElection
	elector, err := leader.New(leader.Config{
		Enabled: le.Enabled, Namespace: le.Namespace, Name: le.Name, Identity: leader.Identity(le.PodName),
		LeaseDuration: le.LeaseDuration, RenewDeadline: le.RenewDeadline, RetryPeriod: le.RetryPeriod,
	}, clients.Kube, log)
	if err != nil {
		return err
	}
	registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "gantry_leader",
		Help: "1 while this replica holds the leader Lease and runs the background loops.",
	}, func() float64 {
		if elector.Leading() {
			return 1
		}
		return 0
	}))
	electorDone := make(chan error, 1)
	go func() { electorDone <- elector.Run(ctx, loops) }()
	proxyDeps, err := startProxy(ctx, informerClients, db, auditLog, registry, log)
	if err != nil {
		return err
	}

	// The team page shows each team's webhook and deliveries, kept until one changes.
	webhooks := notify.Webhooks{Store: db, Audit: auditLog, Kept: store.NewKept[notify.TeamWebhook](changes, store.TopicWebhooks)}
	gin.SetMode(gin.ReleaseMode)
	handler, probes, err := web.NewHandlers(web.Deps{
		PublicURL:     cfg.PublicURL,
		Issuer:        cfg.OIDCIssuer,
		CSRFKey:       auth.DeriveKey(cfg.OIDCClientSecret, "csrf"),
		SecureCookies: cfg.SecureCookies(),
		Store:         db,
		Sessions:      sessions,
		Login:         oidcRP,
		Auth: &auth.Authenticator{
			Sessions: sessions,
			Store:    db,
			Resolver: auth.Resolver{Teams: db, AdminGroups: cfg.AdminGroups},
			Log:      log,
			// A token of someone who stopped signing in, or lost every team, stops working.
			TokenOwnerInactivity: cfg.TokenOwnerInactivity,
		},
		Audit:      auditLog,
		Overviews:  overviews,
		Quota:      quotaDeps,
		Launcher:   launcher,
		Jobs:       jobReader,
		Logs:       podLogs,
		Acceptance: acceptanceRuns,
		Status:     statusDeps,
		Catalog:    catalogAdmin,
		Proxy:      proxyDeps,
		Idle:       idle,
		Attempts:   db,
		Webhooks:   webhooks,
		Ready:      ready,
		Changes:    changes,
		Cluster:    contact,
		Static:     static.FS,
		Registry:   registry,
		Log:        log,

		TrustedProxies: cfg.TrustedProxies,
		SeparateProbes: cfg.ProbeListen != "",
	})
	if err != nil {
		return err
	}

	srv := newServer(cfg.Listen, handler)
	errc := make(chan error, 2)
	go func() {
		log.Info("gantry listening", "addr", cfg.Listen, "public_url", cfg.PublicURL.String())
		errc <- srv.ListenAndServe()
	}()
	var probeSrv *http.Server
	if probes != nil {
		probeSrv = newServer(cfg.ProbeListen, probes)
		go func() {
			log.Info("probes and metrics listening", "addr", cfg.ProbeListen)
			if err := probeSrv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
				errc <- fmt.Errorf("probes: %w", err)
			}
		}()
	}
	if cfg.DebugListen != "" {
		debugSrv := newServer(cfg.DebugListen, debugHandler())
		go func() {
			log.Info("profiles listening", "addr", cfg.DebugListen)
			if err := debugSrv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
				errc <- fmt.Errorf("profiles: %w", err)
			}
		}()
		defer func() { _ = debugSrv.Close() }()
	}
	select {
	case err := <-errc:
		return fmt.Errorf("serve %s: %w", cfg.Listen, err)
	case <-ctx.Done():
	}
	log.Info("shutting down", "timeout", shutdownTimeout)
	shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("drain connections: %w", err)
	}
	// Probes answer until the portal has drained, then stop too.
	if probeSrv != nil {
		if err := probeSrv.Shutdown(shutdownCtx); err != nil {
			return fmt.Errorf("stop probes: %w", err)
		}
	}
	// The loops stop and the Lease is released, so another replica leads at once.
	if err := <-electorDone; err != nil {
		return err
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve %s: %w", cfg.Listen, err)
	}
	return nil
}

// debugHandler serves Go's runtime profiles (heap, CPU, goroutines) for
// --debug-listen, which an operator keeps private.
func debugHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// newServer is an HTTP server with timeouts against slow or idle clients.
func newServer(addr string, h http.Handler) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		// Bodies are at most web.MaxBodyBytes; a minute reads them on a slow link.
		ReadTimeout: time.Minute,
		// Bounds every answer, the largest pages and CSV exports included. A
		// streaming handler added later (logs, the notebook proxy) lifts it for
		// its own response with http.ResponseController.SetWriteDeadline.
		WriteTimeout: 2 * time.Minute,
		IdleTimeout:  2 * time.Minute,
	}
}

// discover retries OIDC discovery for a while: the IdP may start after us.
func discover(ctx context.Context, cfg config.Config, log *slog.Logger) (*auth.OIDC, error) {
	opts := auth.OIDCOptions{
		Issuer:                cfg.OIDCIssuer,
		ClientID:              cfg.OIDCClientID,
		ClientSecret:          cfg.OIDCClientSecret,
		Scopes:                cfg.OIDCScopes,
		GroupsClaim:           cfg.OIDCGroupsClaim,
		RedirectURL:           cfg.PublicURL.String() + "/auth/callback",
		PostLogoutRedirectURL: cfg.PublicURL.String() + "/",
	}
	deadline := time.Now().Add(time.Minute)
	for {
		rp, err := auth.NewOIDC(ctx, opts)
		if err == nil {
			return rp, nil
		}
		if time.Now().After(deadline) {
			return nil, err
		}
		log.Warn("OIDC discovery failed, retrying", "issuer", cfg.OIDCIssuer, "err", err)
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("OIDC discovery: %w", ctx.Err())
		case <-time.After(2 * time.Second):
		}
	}
}
