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
	BeginLogin(ctx context.Context, sm *scs.SessionManager, next string) (string, error)
	CompleteLogin(ctx context.Context, sm *scs.SessionManager, query url.Values) (auth.Identity, string, error)
	LogoutURL(idTokenHint string) string
}

// Store is what the handlers need from the database.
type Store interface {
	RecordLogin(ctx context.Context, u store.User) error
	APITokens(ctx context.Context, username string) ([]store.APIToken, error)
	CreateAPIToken(ctx context.Context, t store.APIToken) (store.APIToken, error)
	RevokeAPIToken(ctx context.Context, username string, id int64, at time.Time) (store.APIToken, error)
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
	// CSRFKey is the 32-byte key signing CSRF cookies; equal on all replicas.
	CSRFKey []byte
	// SecureCookies marks cookies Secure (public URL is https).
	SecureCookies bool

	Store     Store
	Sessions  *scs.SessionManager
	Login     LoginFlow
	Auth      *auth.Authenticator
	Audit     *audit.Log
	Overviews TeamOverviews
	Ready     []ReadinessCheck
	// Static serves /static/*; nil disables it.
	Static fs.FS

	Registry *prometheus.Registry
	Log      *slog.Logger
	Now      func() time.Time
	// ReadyTimeout bounds each readiness check; zero means two seconds.
	ReadyTimeout time.Duration
}

// handler holds what every action needs.
type handler struct {
	Deps
}

// NewHandler builds the portal's HTTP handler.
func NewHandler(d Deps) (http.Handler, error) {
	if err := d.validate(); err != nil {
		return nil, err
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.ReadyTimeout == 0 {
		d.ReadyTimeout = 2 * time.Second
	}
	h := &handler{Deps: d}
	metrics, err := newHTTPMetrics(d.Registry)
	if err != nil {
		return nil, err
	}

	r := gin.New()
	r.ContextWithFallback = true
	r.RedirectTrailingSlash = false
	r.HandleMethodNotAllowed = true
	r.Use(h.requestID, h.requestLog, metrics.middleware, h.securityHeaders, gin.CustomRecovery(h.recovered))
	r.NoRoute(append(h.sessionMiddleware(), h.notFound)...)
	r.NoMethod(h.methodNotAllowed)

	r.GET("/healthz", h.healthz)
	r.GET("/readyz", h.readyz)
	r.GET("/metrics", metrics.handler(d.Registry))
	if d.Static != nil {
		r.StaticFS("/static", http.FS(d.Static))
	}

	pages := r.Group("/", h.sessionMiddleware()...)
	pages.GET("/auth/login", h.login)
	pages.GET("/auth/callback", h.callback)
	pages.POST("/auth/logout", h.logout)
	signedIn := pages.Group("/", h.requirePageUser)
	signedIn.GET("/", h.home)
	signedIn.GET("/profile", h.profile)
	signedIn.POST("/profile/tokens", h.tokenCreate)
	signedIn.POST("/profile/tokens/:id/revoke", h.tokenRevoke)

	api := r.Group("/api/v1", h.apiMiddleware()...)
	api.GET("/me", h.apiMe)
	return r, nil
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
