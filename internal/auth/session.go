package auth

import (
	"database/sql"
	"net/http"
	"time"

	"github.com/alexedwards/scs/postgresstore"
	"github.com/alexedwards/scs/v2"
	"github.com/gin-gonic/gin"
)

// SessionCookieName is the name of the portal's session cookie.
const SessionCookieName = "gantry_session"

// Session keys.
const (
	keyUserID     = "auth.user_id"
	keyIDToken    = "auth.id_token"
	keyLoginState = "auth.login.state"
	keyNonce      = "auth.login.nonce"
	keyVerifier   = "auth.login.verifier"
	keyNext       = "auth.login.next"
)

// SessionOptions configure the session cookie and timeouts.
type SessionOptions struct {
	IdleTimeout time.Duration
	Lifetime    time.Duration
	// Secure marks the cookie Secure; set it when the portal is served over TLS.
	Secure bool
	// CleanupInterval is how often expired sessions are deleted; zero disables it.
	CleanupInterval time.Duration
}

// NewSessionManager returns a session manager keeping sessions in the
// sessions table of db.
func NewSessionManager(db *sql.DB, opts SessionOptions) *scs.SessionManager {
	sm := scs.New()
	sm.Store = postgresstore.NewWithConfig(db, postgresstore.Config{CleanUpInterval: opts.CleanupInterval})
	sm.IdleTimeout = opts.IdleTimeout
	sm.Lifetime = opts.Lifetime
	sm.Cookie.Name = SessionCookieName
	sm.Cookie.HttpOnly = true
	sm.Cookie.SameSite = http.SameSiteLaxMode
	sm.Cookie.Secure = opts.Secure
	sm.Cookie.Path = "/"
	sm.Cookie.Persist = false
	return sm
}

// LoadSession is gin middleware that loads the session for the request
// and saves it (writing the cookie) just before the response is written.
// onError is called when the session store fails.
func LoadSession(sm *scs.SessionManager, onError func(*gin.Context, error)) gin.HandlerFunc {
	return func(c *gin.Context) {
		c.Writer.Header().Add("Vary", "Cookie")
		var token string
		if cookie, err := c.Request.Cookie(sm.Cookie.Name); err == nil {
			token = cookie.Value
		}
		ctx, err := sm.Load(c.Request.Context(), token)
		if err != nil {
			onError(c, err)
			c.Abort()
			return
		}
		c.Request = c.Request.WithContext(ctx)
		w := &sessionWriter{ResponseWriter: c.Writer, c: c, sm: sm, onError: onError}
		c.Writer = w
		c.Next()
		w.commit()
	}
}

// sessionWriter commits the session before the first byte of the response,
// because the cookie must be in the headers.
type sessionWriter struct {
	gin.ResponseWriter
	c         *gin.Context
	sm        *scs.SessionManager
	onError   func(*gin.Context, error)
	committed bool
}

func (w *sessionWriter) commit() {
	if w.committed {
		return
	}
	w.committed = true
	ctx := w.c.Request.Context()
	switch w.sm.Status(ctx) {
	case scs.Modified:
		token, expiry, err := w.sm.Commit(ctx)
		if err != nil {
			// Fall back to the inner writer so the error page is not committed again.
			w.c.Writer = w.ResponseWriter
			w.onError(w.c, err)
			return
		}
		w.sm.WriteSessionCookie(ctx, w.ResponseWriter, token, expiry)
	case scs.Destroyed:
		w.sm.WriteSessionCookie(ctx, w.ResponseWriter, "", time.Time{})
	}
}

func (w *sessionWriter) WriteHeader(code int) {
	w.commit()
	w.ResponseWriter.WriteHeader(code)
}

func (w *sessionWriter) WriteHeaderNow() {
	w.commit()
	w.ResponseWriter.WriteHeaderNow()
}

func (w *sessionWriter) Write(b []byte) (int, error) {
	w.commit()
	return w.ResponseWriter.Write(b)
}

func (w *sessionWriter) WriteString(s string) (int, error) {
	w.commit()
	return w.ResponseWriter.WriteString(s)
}
