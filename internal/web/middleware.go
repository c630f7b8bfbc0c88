package web

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/gorilla/csrf"

	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/internal/problem"
	"github.com/gantry-dev/gantry/internal/servertiming"
	"github.com/gantry-dev/gantry/views"
)

const (
	csrfCookieName = "gantry_csrf"
	csrfFieldName  = views.CSRFField
	csrfHeaderName = "X-CSRF-Token"
)

// requestIDKey is the gin context key of the request id.
type requestIDKey struct{}

func (h *handler) requestID(c *gin.Context) {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	id := hex.EncodeToString(b)
	c.Set(requestIDKey{}, id)
	c.Header("X-Request-ID", id)
	c.Next()
}

// serverTiming names, in each answer's Server-Timing header, how long the
// request waited on PostgreSQL, Prometheus and the Kubernetes API server
// before its first byte, and its time in the portal until then ("total");
// and, in a Server-Timing trailer after the body, its whole time in the
// portal, the page written out included ("view"), for clients that read
// trailers (the load run does): a page streams most of itself after its
// first byte.
func (h *handler) serverTiming(c *gin.Context) {
	ctx, t := servertiming.Start(c.Request.Context())
	c.Request = c.Request.WithContext(ctx)
	c.Writer = &timedWriter{ResponseWriter: c.Writer, timing: t}
	c.Next()
	if c.Writer.Written() && !c.IsWebsocket() {
		c.Writer.Header().Set(http.TrailerPrefix+"Server-Timing", t.Whole())
	}
}

// timedWriter adds the Server-Timing header just before the headers go out.
type timedWriter struct {
	gin.ResponseWriter
	timing  *servertiming.Timing
	stamped bool
}

func (w *timedWriter) stamp() {
	if !w.stamped && !w.Written() {
		w.stamped = true
		w.Header().Set("Server-Timing", w.timing.Header())
	}
}

func (w *timedWriter) WriteHeaderNow() {
	w.stamp()
	w.ResponseWriter.WriteHeaderNow()
}

func (w *timedWriter) Write(b []byte) (int, error) {
	w.stamp()
	return w.ResponseWriter.Write(b)
}

func (w *timedWriter) WriteString(s string) (int, error) {
	w.stamp()
	return w.ResponseWriter.WriteString(s)
}

// Unwrap lets http.ResponseController reach the connection (the proxies
// lift its deadlines and read the request while answering).
func (w *timedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *timedWriter) Flush() {
	w.stamp()
	w.ResponseWriter.Flush()
}

// noteWrites tells the figures kept until a change (Deps.Changes) that a
// request that may write is under way: its user's next view reads them
// afresh instead of waiting for the database's notice of the change.
func (h *handler) noteWrites(c *gin.Context) {
	if safeMethod(c.Request.Method) {
		c.Next()
		return
	}
	done := h.Changes.Writing()
	defer done()
	c.Next()
}

func requestIDOf(c *gin.Context) string {
	v, _ := c.Get(requestIDKey{})
	s, _ := v.(string)
	return s
}

func (h *handler) requestLog(c *gin.Context) {
	start := time.Now()
	c.Next()
	route := c.FullPath()
	if route == "" {
		route = "unmatched"
	}
	attrs := []any{
		"method", c.Request.Method,
		"route", route,
		"path", c.Request.URL.Path,
		"status", c.Writer.Status(),
		"duration", time.Since(start),
		"request_id", requestIDOf(c),
		"ip", c.ClientIP(),
	}
	if u, ok := auth.CurrentUser(c); ok {
		attrs = append(attrs, "user", u.Username, "via", u.Via())
	}
	level := h.levelFor(c.Writer.Status())
	if level == slog.LevelInfo && (route == "/healthz" || route == "/readyz" || route == "/metrics") {
		level = slog.LevelDebug // probes and scrapes would drown the log
	}
	h.Log.Log(c.Request.Context(), level, "request", attrs...)
}

func (h *handler) securityHeaders(c *gin.Context) {
	formAction := "'self'"
	if h.Issuer != "" {
		if u, err := url.Parse(h.Issuer); err == nil {
			formAction += " " + u.Scheme + "://" + u.Host
		}
	}
	hd := c.Writer.Header()
	hd.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
		"frame-ancestors 'none'; base-uri 'self'; form-action "+formAction)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "same-origin")
	hd.Set("X-Frame-Options", "DENY")
	if h.SecureCookies {
		hd.Set("Strict-Transport-Security", "max-age=31536000")
	}
	c.Next()
}

// sessionMiddleware loads the browser session, checks CSRF on unsafe
// methods and attaches the session's user.
func (h *handler) sessionMiddleware() []gin.HandlerFunc {
	return []gin.HandlerFunc{
		auth.LoadSession(h.Sessions, h.fail),
		markSessionLoaded,
		h.csrfProtect(),
		h.Auth.SessionUser(h.fail),
	}
}

// apiMiddleware authenticates API requests: a bearer token (no cookies, so
// no CSRF check), or else the browser session with the usual CSRF check.
func (h *handler) apiMiddleware() []gin.HandlerFunc {
	bearer := h.Auth.BearerToken(h.fail)
	browser := h.sessionMiddleware()
	skipIfBearer := func(next gin.HandlerFunc) gin.HandlerFunc {
		return func(c *gin.Context) {
			if auth.HasBearer(c.Request) {
				c.Next()
				return
			}
			next(c)
		}
	}
	out := make([]gin.HandlerFunc, 0, len(browser)+2)
	for _, m := range browser {
		out = append(out, skipIfBearer(m))
	}
	out = append(out, func(c *gin.Context) {
		if !auth.HasBearer(c.Request) {
			c.Next()
			return
		}
		bearer(c)
	}, h.requireAPIUser)
	return out
}

// ginContextKey carries the gin context into gorilla/csrf's error handler.
type ginContextKey struct{}

// errCSRF is a request refused by the CSRF check.
var errCSRF = problem.New("CSRF check failed", problem.Problem{Kind: problem.Forbidden, Title: "Request refused",
	Detail: "The form you sent is missing its security token or the token does not match this browser session, so nothing was changed. Reload the page and try again."})

func (h *handler) csrfProtect() gin.HandlerFunc {
	trusted := []string{h.PublicURL.Host}
	protect := csrf.Protect(h.CSRFKey,
		csrf.CookieName(csrfCookieName),
		csrf.FieldName(csrfFieldName),
		csrf.RequestHeader(csrfHeaderName),
		csrf.Path("/"),
		csrf.Secure(h.SecureCookies),
		csrf.HttpOnly(true),
		csrf.SameSite(csrf.SameSiteLaxMode),
		csrf.TrustedOrigins(trusted),
		csrf.ErrorHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c, _ := r.Context().Value(ginContextKey{}).(*gin.Context)
			if c == nil {
				http.Error(w, "The request was refused: its security token is missing or wrong.", http.StatusForbidden)
				return
			}
			h.Log.WarnContext(r.Context(), "CSRF check failed", "reason", csrf.FailureReason(r), "path", r.URL.Path)
			h.fail(c, errCSRF)
		})),
	)
	plaintext := h.PublicURL.Scheme == "http"
	return func(c *gin.Context) {
		r := c.Request
		if plaintext {
			r = csrf.PlaintextHTTPRequest(r)
		}
		r = r.WithContext(context.WithValue(r.Context(), ginContextKey{}, c))
		passed := false
		protect(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			passed = true
			c.Request = r
			c.Next()
		})).ServeHTTP(c.Writer, r)
		if !passed {
			c.Abort()
		}
	}
}

// requirePageUser sends anonymous browsers to the login page, remembering
// where they wanted to go.
func (h *handler) requirePageUser(c *gin.Context) {
	if _, ok := auth.CurrentUser(c); ok {
		c.Next()
		return
	}
	next := "/"
	if c.Request.Method == http.MethodGet || c.Request.Method == http.MethodHead {
		next = c.Request.URL.RequestURI()
	}
	c.Redirect(http.StatusFound, "/auth/login?next="+url.QueryEscape(next))
	c.Abort()
}

func (h *handler) requireAPIUser(c *gin.Context) {
	if _, ok := auth.CurrentUser(c); ok {
		c.Next()
		return
	}
	c.Header("WWW-Authenticate", `Bearer realm="gantry"`)
	h.fail(c, auth.ErrInvalidToken)
	c.Abort()
}

func isAPI(c *gin.Context) bool {
	return strings.HasPrefix(c.Request.URL.Path, "/api/")
}
