package auth

import (
	"context"
	"database/sql"
	"net/http"
	"reflect"
	"time"

	"github.com/alexedwards/scs/postgresstore"
	"github.com/alexedwards/scs/v2"
	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/servertiming"
	"github.com/gantry-dev/gantry/internal/store"
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
	// keyRenewed is when the session row was last written (Unix seconds).
	keyRenewed = "auth.renewed"
)

// maxRenewInterval is the longest a session goes without its idle deadline
// being pushed back while it is used. Between renewals a page view writes
// nothing, so an idle session may end up to this much (or IdleTimeout/4,
// if shorter) before IdleTimeout after its last request, never later.
const maxRenewInterval = time.Minute

// SessionOptions configure the session cookie and timeouts.
type SessionOptions struct {
	IdleTimeout time.Duration
	Lifetime    time.Duration
	// Secure marks the cookie Secure; set it when the portal is served over TLS.
	Secure bool
	// CleanupInterval is how often expired sessions are deleted; zero disables it.
	CleanupInterval time.Duration
	// Changes, when set, has the replica keep the sessions it read until
	// any replica writes or deletes them (keptSessions); nil reads each
	// view's session from the database.
	Changes *store.Changes
}

// NewSessionManager returns a session manager keeping sessions in the
// sessions table of db.
func NewSessionManager(db *sql.DB, opts SessionOptions) *scs.SessionManager {
	sm := scs.New()
	inner := postgresstore.NewWithConfig(db, postgresstore.Config{CleanUpInterval: opts.CleanupInterval})
	sm.Store = newSessionStore(inner, opts.Changes, sm.Codec, opts.IdleTimeout)
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

// sessionStore keeps the sessions it read while nothing changes them
// (keptSessions), and marks the errors of a database that did not answer,
// so a session that cannot be read while the database restarts is
// answered in words (and the person stays signed in once it is back).
type sessionStore struct {
	inner scs.Store
	kept  *keptSessions
}

// newSessionStore keeps sessions when changes is set, each for at most a
// quarter of idleTimeout: a used session is written at least that often
// (renewInterval), so its row's idle deadline is always further away.
func newSessionStore(inner scs.Store, changes *store.Changes, codec scs.Codec, idleTimeout time.Duration) sessionStore {
	s := sessionStore{inner: inner}
	if changes != nil {
		hold := maxSessionHold
		if idleTimeout > 0 {
			hold = min(idleTimeout/4, maxRenewInterval, maxSessionHold)
		}
		s.kept = newKeptSessions(changes, codec, hold)
	}
	return s
}

// FindCtx, CommitCtx and DeleteCtx are what scs calls (scs.CtxStore):
// the request's context carries its Server-Timing, which counts each
// round trip to the sessions table as a wait on the database.
func (s sessionStore) FindCtx(ctx context.Context, token string) ([]byte, bool, error) {
	var m readMark
	if s.kept != nil {
		if b, ok := s.kept.get(token); ok {
			return b, true, nil
		}
		m = s.kept.mark()
	}
	t0 := time.Now()
	b, found, err := s.inner.Find(token)
	servertiming.Add(ctx, servertiming.DB, time.Since(t0))
	if err != nil {
		return nil, false, store.MarkUnavailable(err)
	}
	if found && s.kept != nil {
		s.kept.keep(token, b, m)
	}
	return b, found, nil
}

func (s sessionStore) CommitCtx(ctx context.Context, token string, b []byte, expiry time.Time) error {
	s.forget(token)
	defer s.forget(token)
	t0 := time.Now()
	err := s.inner.Commit(token, b, expiry)
	servertiming.Add(ctx, servertiming.DB, time.Since(t0))
	return store.MarkUnavailable(err)
}

func (s sessionStore) DeleteCtx(ctx context.Context, token string) error {
	s.forget(token)
	defer s.forget(token)
	t0 := time.Now()
	err := s.inner.Delete(token)
	servertiming.Add(ctx, servertiming.DB, time.Since(t0))
	return store.MarkUnavailable(err)
}

func (s sessionStore) Find(token string) ([]byte, bool, error) {
	return s.FindCtx(context.Background(), token)
}

func (s sessionStore) Commit(token string, b []byte, expiry time.Time) error {
	return s.CommitCtx(context.Background(), token, b, expiry)
}

func (s sessionStore) Delete(token string) error { return s.DeleteCtx(context.Background(), token) }

// forget drops this replica's copy of a session it writes or deletes,
// before (so no view answers the old copy meanwhile) and after (so a read
// that raced the write is not kept).
func (s sessionStore) forget(token string) {
	if s.kept != nil {
		s.kept.drop(token)
	}
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
		w := &sessionWriter{ResponseWriter: c.Writer, c: c, sm: sm, onError: onError,
			loadedToken: sm.Token(ctx), loaded: sessionValues(ctx, sm)}
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
	// loadedToken and loaded are the session as read from the store, to
	// tell a real change from scs's idle-timeout touch.
	loadedToken string
	loaded      map[string]any
}

// sessionValues copies the session's values.
func sessionValues(ctx context.Context, sm *scs.SessionManager) map[string]any {
	keys := sm.Keys(ctx)
	out := make(map[string]any, len(keys))
	for _, k := range keys {
		out[k] = sm.Get(ctx, k)
	}
	return out
}

// renewInterval is how long a used session goes without a write.
func renewInterval(sm *scs.SessionManager) time.Duration {
	if d := sm.IdleTimeout / 4; d < maxRenewInterval {
		return d
	}
	return maxRenewInterval
}

// needsWrite reports whether the session must be written: scs marks every
// loaded session modified when IdleTimeout is set, which would write the
// row on every page view. It is written only when its token or values
// changed, or when its idle deadline was last pushed back renewInterval ago.
func (w *sessionWriter) needsWrite(ctx context.Context, now time.Time) bool {
	if w.loadedToken == "" || w.sm.Token(ctx) != w.loadedToken || !reflect.DeepEqual(sessionValues(ctx, w.sm), w.loaded) {
		return true
	}
	if w.sm.IdleTimeout <= 0 {
		return false
	}
	renewed := time.Unix(w.sm.GetInt64(ctx, keyRenewed), 0)
	return now.Sub(renewed) >= renewInterval(w.sm)
}

func (w *sessionWriter) commit() {
	if w.committed {
		return
	}
	w.committed = true
	ctx := w.c.Request.Context()
	switch w.sm.Status(ctx) {
	case scs.Modified:
		now := time.Now()
		if !w.needsWrite(ctx, now) {
			return
		}
		w.sm.Put(ctx, keyRenewed, now.Unix())
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

var _ scs.CtxStore = sessionStore{}
