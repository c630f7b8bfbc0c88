// Package web is the portal's HTTP layer: the gin router, one handler file
// per action, middleware, and the one place errors become pages.
package web

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/alexedwards/scs/v2"
	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gantry-dev/gantry/internal/audit"
	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/internal/queue"
	"github.com/gantry-dev/gantry/internal/store"
)

// TeamOverviews reads a team's queue and quota from the cluster.
type TeamOverviews interface {
	TeamOverview(team string) (queue.TeamOverview, error)
}

// LoginFlow is the OpenID Connect relying party.
type LoginFlow interface {
	StartLogin(next string) (auth.LoginInProgress, string, error)
	FinishLogin(ctx context.Context, want auth.LoginInProgress, query url.Values) (auth.Identity, string, error)
	LogoutURL(idTokenHint string) string
}

// Store is what the handlers need from the database.
type Store interface {
	RecordLogin(ctx context.Context, u store.User) (store.User, error)
	APITokens(ctx context.Context, userID int64) ([]store.APIToken, error)
	AllAPITokens(ctx context.Context, limit int) ([]store.APIToken, error)
	CreateAPIToken(ctx context.Context, t store.APIToken) (store.APIToken, error)
	RevokeAPIToken(ctx context.Context, userID, id int64, at time.Time) (store.APIToken, error)
	RevokeAnyAPIToken(ctx context.Context, id int64, at time.Time) (store.APIToken, error)
	// ReadJobTogether answers a job page's reads of one job's rows (its
	// manifest, runs, moments, idle episode and verdict) in one round trip.
	ReadJobTogether(ctx context.Context, namespace, job string) context.Context
}

// ReadinessCheck is one dependency /readyz checks.
type ReadinessCheck struct {
	Name  string
	Check func(ctx context.Context) error
}

// Deps are the handlers' collaborators. Overviews and Static may be nil.
type Deps struct {
	PublicURL *url.URL
	// Issuer is allowed as a form target in the CSP (logout redirects there).
	Issuer string
	// CSRFKey is the 32-byte key signing CSRF cookies, from which the
	// login cookie's keys are derived too; equal on all replicas.
	CSRFKey []byte
	// SecureCookies marks cookies Secure (public URL is https).
	SecureCookies bool

	Store     Store
	Sessions  *scs.SessionManager
	Login     LoginFlow
	Auth      *auth.Authenticator
	Audit     *audit.Log
	Overviews TeamOverviews
	// Quota serves quota requests, approvals, notifications, team admin and
	// the audit log; nil leaves those pages out.
	Quota *QuotaDeps
	// Launcher and Jobs serve launching and job pages; nil disables them.
	Launcher Launcher
	Jobs     JobReader
	// Logs serves the job log pages and /api/v1 logs (with Launcher and
	// Jobs); nil leaves them out.
	Logs JobLogs
	// Status serves queue, GPU and cost status (team and cluster pages,
	// the job status component, /api/v1 status); nil leaves them out.
	Status *StatusDeps
	// Catalog serves the admin pages for templates, prices and the image
	// allowlist; nil leaves them out.
	Catalog CatalogAdmin
	// Acceptance serves pool acceptance definitions, runs and reports; nil
	// leaves them out.
	Acceptance AcceptanceRuns
	// Proxy serves opening notebooks and calling endpoints through the
	// portal (with Launcher and Jobs); nil leaves them out.
	Proxy *ProxyDeps
	// Idle serves the idle reclaim's job card, holds, exemptions and the
	// admins' policies (with Launcher and Jobs); nil leaves them out.
	Idle IdleReclaim
	// Attempts reads the recorded attempts of jobs (job pages, team
	// recovery); nil leaves them out. Webhooks serves the team's chat
	// webhook; nil leaves it out.
	Attempts AttemptRecords
	Webhooks TeamWebhooks
	Ready    []ReadinessCheck
	// Changes tells which tables changed (the database announces it), so
	// that small figures most pages show are kept until then; nil reads
	// them on every view.
	Changes *store.Changes
	// Cluster says whether the Kubernetes API server answers; nil means
	// it always does.
	Cluster ClusterContact
	// Static serves /static/*; nil disables it.
	Static fs.FS

	// TrustedProxies are the addresses or CIDR ranges of the reverse proxies
	// whose X-Forwarded-For is believed; none means the peer address is the client's.
	TrustedProxies []string
	// SeparateProbes serves /healthz, /readyz and /metrics only from the
	// probe handler NewHandlers returns, not from the portal's own.
	SeparateProbes bool

	Registry *prometheus.Registry
	Log      *slog.Logger
	Now      func() time.Time
	// ReadyTimeout bounds each readiness check; zero means two seconds.
	ReadyTimeout time.Duration
}

// handler holds what every action needs.
type handler struct {
	Deps
	// loginCookie carries a login in progress from /auth/login to the callback.
	loginCookie *auth.LoginCookie
	// teamFigures shares the team page's wait and cost figures between
	// requests for a few seconds; nil computes them every time.
	teamFigures *teamFiguresCache
	// ledgerFigures keeps what the team and cluster pages derive from the
	// ledger until it changes; nil reads the ledger every time.
	ledgerFigures *ledgerFiguresCache
	// teamRecoveries shares each team's recovery figure (every attempt of its
	// last days, read from Postgres) between views for teamRecoveryTTL; nil
	// reads it every time.
	teamRecoveries *sharedFigures[queue.Recovery]
	// badges keeps each user's nav badge counts until notifications or
	// quota requests change.
	badges *store.Kept[navBadgeCounts]
	// jobGPU counts job panels by how their GPU figures came; nil counts nothing.
	jobGPU *prometheus.CounterVec
	// weeklyCharts keeps the cluster page's weekly charts rendered.
	weeklyCharts renderedWeeks
}

// NewHandler builds the portal's HTTP handler, probes and metrics included.
func NewHandler(d Deps) (http.Handler, error) {
	d.SeparateProbes = false
	app, _, err := NewHandlers(d)
	return app, err
}

// NewHandlers builds the portal's HTTP handler and, when d.SeparateProbes
// is set, a second one serving only /healthz, /readyz and /metrics for a
// port that kubelet and Prometheus reach but users do not; else probes is nil.
func NewHandlers(d Deps) (app, probes http.Handler, err error) {
	if err := d.validate(); err != nil {
		return nil, nil, err
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.ReadyTimeout == 0 {
		d.ReadyTimeout = 2 * time.Second
	}
	d.Status = withSharedFigures(d.Status, d.Changes)
	h := &handler{Deps: d, teamFigures: newTeamFiguresCache(), ledgerFigures: newLedgerFiguresCache(),
		teamRecoveries: &sharedFigures[queue.Recovery]{}, loginCookie: auth.NewLoginCookie(d.CSRFKey, d.SecureCookies),
		badges: store.NewKept[navBadgeCounts](d.Changes, store.TopicNotifications, store.TopicQuotaRequests)}
	metrics, err := newHTTPMetrics(d.Registry)
	if err != nil {
		return nil, nil, err
	}
	h.jobGPU = metrics.jobGPU

	r := gin.New()
	// Gin believes X-Forwarded-For from every peer unless told otherwise.
	if err := r.SetTrustedProxies(d.TrustedProxies); err != nil {
		return nil, nil, fmt.Errorf("web: trusted proxies: %w", err)
	}
	r.ContextWithFallback = true
	r.RedirectTrailingSlash = false
	r.HandleMethodNotAllowed = true
	r.Use(h.serverTiming, h.requestID, h.requestLog, metrics.middleware, h.securityHeaders, gin.CustomRecovery(h.recovered), h.limitBody)
	r.NoRoute(append(h.sessionMiddleware(), h.notFound)...)
	r.NoMethod(h.methodNotAllowed)

	if d.SeparateProbes {
		p := gin.New()
		if err := p.SetTrustedProxies(nil); err != nil {
			return nil, nil, fmt.Errorf("web: probe handler: %w", err)
		}
		p.Use(gin.CustomRecovery(h.recovered))
		h.probeRoutes(p, metrics)
		probes = p
	} else {
		h.probeRoutes(r, metrics)
	}
	if d.Static != nil {
		r.StaticFS("/static", http.FS(d.Static))
	}

	// Writes through the portal's own pages and API (not the notebooks and
	// endpoints it proxies) are noted for the kept figures.
	pages := r.Group("/", append([]gin.HandlerFunc{h.noteWrites}, h.sessionMiddleware()...)...)
	pages.GET("/auth/login", h.login)
	pages.GET("/auth/callback", h.callback)
	pages.POST("/auth/logout", h.logout)
	signedIn := pages.Group("/", h.requirePageUser)
	signedIn.GET("/", h.home)
	signedIn.GET("/profile", h.profile)
	signedIn.POST("/profile/tokens", h.tokenCreate)
	signedIn.POST("/profile/tokens/:id/revoke", h.tokenRevokePage(ownTokens))
	tokenAdmin := signedIn.Group("/admin", h.adminOnly)
	tokenAdmin.GET("/tokens", h.adminTokensList)
	tokenAdmin.POST("/tokens/:id/revoke", h.tokenRevokePage(anyTokens))
	quotaPages := signedIn.Group("/", h.quotaOn)
	quotaPages.GET("/quota-requests", h.quotaList)
	quotaPages.POST("/quota-requests", h.quotaCreate)
	quotaPages.POST("/quota-requests/:id/withdraw", h.quotaWithdraw)
	quotaPages.GET("/approvals", h.approvalsList)
	quotaPages.POST("/approvals/:id/decide", h.approvalsDecide)
	quotaPages.GET("/notifications", h.notificationsList)
	quotaPages.POST("/notifications/read", h.notificationsRead)
	adminPages := quotaPages.Group("/admin", h.adminOnly)
	adminPages.GET("/teams", h.teamsAdminList)
	adminPages.POST("/teams", h.teamsAdminCreate)
	adminPages.GET("/teams/:name", h.teamsAdminEdit)
	adminPages.POST("/teams/:name", h.teamsAdminUpdate)
	adminPages.POST("/teams/:name/retire", h.teamsAdminRetire)
	adminPages.GET("/audit", h.auditList)
	if d.Launcher != nil && d.Jobs != nil {
		signedIn.GET("/launch", h.templatesList)
		signedIn.GET("/launch/:template", h.launchForm)
		signedIn.POST("/launch/:template", h.clusterAnswers, h.launchSubmit)
		signedIn.GET("/jobs", h.jobsList)
		signedIn.GET("/teams/:team/jobs/:name", h.jobShow)
		signedIn.GET("/teams/:team/jobs/:name/status", h.jobStatusFragment)
		signedIn.GET("/teams/:team/jobs/:name/manifest", h.jobManifest)
		signedIn.POST("/teams/:team/jobs/:name/stop", h.clusterAnswers, h.jobStop)
		signedIn.POST("/teams/:team/jobs/:name/resume", h.clusterAnswers, h.jobResume)
		signedIn.POST("/teams/:team/jobs/:name/delete", h.clusterAnswers, h.jobDelete)
		signedIn.POST("/teams/:team/jobs/:name/scale", h.clusterAnswers, h.jobScale)
		if d.Logs != nil {
			signedIn.GET("/teams/:team/jobs/:name/logs", h.jobLogs)
			signedIn.GET("/teams/:team/jobs/:name/logs/follow", h.jobLogsFollow)
			signedIn.GET("/teams/:team/jobs/:name/logs/download", h.jobLogsDownload)
		}
	}
	if d.Status != nil {
		signedIn.GET("/team", h.teamHome)
		signedIn.GET("/teams/:team", h.teamShow)
		signedIn.GET("/teams/:team/ledger.csv", h.teamLedgerCSV)
		if d.Webhooks != nil {
			signedIn.POST("/teams/:team/webhook", h.teamWebhookUpdate)
		}
		signedIn.GET("/admin/cluster", h.adminOnly, h.clusterShow)
		signedIn.POST("/teams/:team/acceptance-rule", h.teamAcceptanceRule)
		signedIn.GET("/admin/shared-costs", h.adminOnly, h.adminSharedCostsList)
		signedIn.POST("/admin/shared-costs", h.adminOnly, h.adminSharedCostsSet)
		signedIn.POST("/admin/cost-comparison", h.adminOnly, h.adminCostComparisonSet)
		if d.Jobs != nil {
			signedIn.GET("/teams/:team/jobs/:name/queue", h.jobQueueStatus)
			signedIn.POST("/teams/:team/jobs/:name/verdict", h.jobVerdict)
		}
	}

	if d.Catalog != nil {
		catalogPages := signedIn.Group("/admin", h.adminOnly)
		catalogPages.GET("/templates", h.adminTemplatesList)
		catalogPages.GET("/templates/new", h.adminTemplatesNew)
		catalogPages.POST("/templates", h.adminTemplatesSave)
		catalogPages.POST("/templates/preview", h.adminTemplatesPreview)
		catalogPages.POST("/templates/import", h.adminTemplatesImport)
		catalogPages.GET("/templates/:name", h.adminTemplatesShow)
		catalogPages.GET("/templates/:name/diff", h.adminTemplatesDiff)
		catalogPages.GET("/templates/:name/export", h.adminTemplatesExport)
		catalogPages.POST("/templates/:name/publish", h.adminTemplatesPublish)
		catalogPages.POST("/templates/:name/retire", h.adminTemplatesRetire)
		catalogPages.POST("/templates/:name/duplicate", h.adminTemplatesDuplicate)
		catalogPages.GET("/prices", h.adminPricesList)
		catalogPages.POST("/prices", h.adminPricesSet)
		catalogPages.GET("/allowlist", h.adminAllowlistShow)
		catalogPages.POST("/allowlist", h.adminAllowlistUpdate)
	}

	if d.Idle != nil && d.Launcher != nil && d.Jobs != nil {
		signedIn.POST("/teams/:team/jobs/:name/idle/keep", h.jobIdleKeep)
		signedIn.POST("/teams/:team/jobs/:name/idle/exempt", h.jobIdleExempt)
		signedIn.POST("/teams/:team/jobs/:name/idle/unexempt", h.jobIdleUnexempt)
		signedIn.GET("/admin/idle", h.adminOnly, h.adminIdleList)
		signedIn.POST("/admin/idle", h.adminOnly, h.adminIdleSet)
	}

	// The API's description is public, so tools can read it before a token exists.
	r.GET("/api/v1/openapi.json", h.apiOpenAPI)
	api := r.Group("/api/v1", append([]gin.HandlerFunc{h.noteWrites}, h.apiMiddleware()...)...)
	api.GET("/me", h.apiMe)
	api.GET("/tokens", h.apiTokensList)
	api.POST("/tokens", h.apiTokensCreate)
	api.POST("/tokens/:id/revoke", h.apiTokenRevoke(ownTokens))
	api.GET("/admin/tokens", h.adminOnly, h.apiTokensAdminList)
	api.POST("/admin/tokens/:id/revoke", h.adminOnly, h.apiTokenRevoke(anyTokens))
	if d.Quota != nil {
		api.GET("/quota-requests", h.apiQuotaRequestsList)
		api.POST("/teams/:team/quota-requests", h.apiQuotaRequestsCreate)
		api.POST("/quota-requests/:id/withdraw", h.apiQuotaRequestsWithdraw)
		api.GET("/approvals", h.apiApprovalsList)
		api.POST("/approvals/:id/decide", h.apiApprovalsDecide)
		api.GET("/notifications", h.apiNotificationsList)
		api.POST("/notifications/read", h.apiNotificationsRead)
		apiAdmin := api.Group("/", h.adminOnly)
		apiAdmin.GET("/teams", h.apiTeamsList)
		apiAdmin.POST("/teams", h.apiTeamsCreate)
		apiAdmin.GET("/teams/:team", h.apiTeamsGet)
		apiAdmin.PUT("/teams/:team", h.apiTeamsUpdate)
		apiAdmin.POST("/teams/:team/retire", h.apiTeamsRetire)
		apiAdmin.GET("/audit", h.apiAuditList)
	}
	if d.Catalog != nil {
		apiCatalog := api.Group("/", h.adminOnly)
		apiCatalog.GET("/admin/templates", h.apiTemplatesAdminList)
		apiCatalog.POST("/templates/import", h.apiTemplatesImport)
		apiCatalog.POST("/templates/preview", h.apiTemplatesPreview)
		apiCatalog.POST("/templates/:name/duplicate", h.apiTemplatesDuplicate)
		apiCatalog.GET("/templates/:name/versions", h.apiTemplatesVersions)
		apiCatalog.GET("/templates/:name/versions/:version", h.apiTemplatesGet)
		apiCatalog.GET("/templates/:name/diff", h.apiTemplatesDiff)
		apiCatalog.POST("/templates/:name/publish", h.apiTemplatesPublish)
		apiCatalog.POST("/templates/:name/retire", h.apiTemplatesRetire)
		apiCatalog.GET("/prices", h.apiPricesList)
		apiCatalog.POST("/prices", h.apiPricesSet)
		apiCatalog.GET("/allowlist", h.apiAllowlistGet)
		apiCatalog.PUT("/allowlist", h.apiAllowlistUpdate)
	}
	if d.Launcher != nil && d.Jobs != nil {
		api.GET("/templates", h.apiTemplates)
		api.GET("/teams/:team/jobs", h.apiJobsList)
		api.POST("/teams/:team/jobs", h.clusterAnswers, h.apiJobCreate)
		api.GET("/teams/:team/jobs/:name", h.apiJobGet)
		api.DELETE("/teams/:team/jobs/:name", h.clusterAnswers, h.apiJobDelete)
		api.POST("/teams/:team/jobs/:name/stop", h.clusterAnswers, h.apiJobsStop)
		api.POST("/teams/:team/jobs/:name/resume", h.clusterAnswers, h.apiJobsResume)
		api.POST("/teams/:team/jobs/:name/scale", h.clusterAnswers, h.apiJobsScale)
		if d.Logs != nil {
			api.GET("/teams/:team/jobs/:name/logs", h.apiJobLogs)
		}
	}
	if d.Proxy != nil && d.Launcher != nil && d.Jobs != nil {
		h.proxyRoutes(r, signedIn, api)
	}
	if d.Idle != nil && d.Launcher != nil && d.Jobs != nil {
		api.GET("/teams/:team/jobs/:name/idle", h.apiJobIdle)
		api.POST("/teams/:team/jobs/:name/idle/keep", h.apiJobIdleKeep)
		api.POST("/teams/:team/jobs/:name/idle/exempt", h.apiJobIdleExempt)
		api.POST("/teams/:team/jobs/:name/idle/unexempt", h.apiJobIdleUnexempt)
		api.GET("/admin/idle-policies", h.adminOnly, h.apiIdlePoliciesList)
		api.PUT("/admin/idle-policies", h.adminOnly, h.apiIdlePoliciesSet)
	}
	if d.Acceptance != nil {
		h.acceptanceRoutes(signedIn, api)
	}
	if d.Status != nil {
		api.GET("/teams/:team/status", h.apiTeamStatus)
		api.GET("/teams/:team/ledger", h.apiTeamLedger)
		if d.Webhooks != nil {
			api.GET("/teams/:team/webhook", h.apiTeamWebhookGet)
			api.PUT("/teams/:team/webhook", h.apiTeamWebhookPut)
		}
		api.GET("/cluster/status", h.apiClusterStatus)
		api.GET("/teams/:team/cost", h.apiTeamsCost)
		api.PUT("/teams/:team/acceptance-rule", h.apiTeamsAcceptanceRule)
		api.GET("/admin/shared-costs", h.adminOnly, h.apiSharedCostsList)
		api.PUT("/admin/shared-costs", h.adminOnly, h.apiSharedCostsSet)
		api.PUT("/admin/cost-comparison", h.adminOnly, h.apiCostComparisonSet)
		api.GET("/cluster/weekly-hours", h.adminOnly, h.apiClusterWeekly)
		if d.Jobs != nil {
			api.GET("/teams/:team/jobs/:name/status", h.apiJobStatus)
			api.POST("/teams/:team/jobs/:name/verdict", h.apiJobsVerdict)
		}
	}
	return r, probes, nil
}

// probeRoutes are liveness, readiness and metrics.
func (h *handler) probeRoutes(r gin.IRoutes, metrics *httpMetrics) {
	r.GET("/healthz", h.healthz)
	r.GET("/readyz", h.readyz)
	r.GET("/metrics", metrics.handler(h.Registry))
}

func (d Deps) validate() error {
	var errs []error
	if d.PublicURL == nil {
		errs = append(errs, errors.New("public URL is required"))
	}
	if len(d.CSRFKey) != 32 {
		errs = append(errs, errors.New("CSRF key must be 32 bytes"))
	}
	if d.Store == nil || d.Sessions == nil || d.Login == nil || d.Auth == nil || d.Audit == nil {
		errs = append(errs, errors.New("store, sessions, login, auth and audit are required"))
	}
	if d.Registry == nil || d.Log == nil {
		errs = append(errs, errors.New("registry and log are required"))
	}
	if len(errs) > 0 {
		return fmt.Errorf("web: %w", errors.Join(errs...))
	}
	return nil
}
