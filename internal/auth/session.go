package auth

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
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
	// Log receives the failures of work done after a view has answered
	// (pushing back a session's idle deadline, reading a kept session
	// again); nil discards them.
	Log *slog.Logger
}

// NewSessionManager returns a session manager keeping sessions in the
// sessions table of db.
func NewSessionManager(db *sql.DB, opts SessionOptions) *scs.SessionManager {
	sm := scs.New()
	sm.Codec = newDecodedSessions(sm.Codec)
	rows := pgSessions{PostgresStore: postgresstore.NewWithConfig(db, postgresstore.Config{CleanUpInterval: opts.CleanupInterval}), db: db}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	sm.Store = newSessionStore(rows, opts.Changes, sm.Codec, opts.IdleTimeout, log)
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

// backgroundTimeout bounds the work a view leaves behind after it has
// answered: pushing back its session's idle deadline, reading its kept
// session again.
const backgroundTimeout = 10 * time.Second

// sessionRows is the sessions table. scs's PostgreSQL store writes and
// deletes rows; a read here also learns the row's idle deadline, and a
// renewal pushes back that deadline alone, which no replica is told of
// (migration 00032): the session itself has not changed.
type sessionRows interface {
	scs.Store
	findRow(ctx context.Context, token string) (data []byte, expiry time.Time, found bool, err error)
	renewRow(ctx context.Context, token string, expiry time.Time) error
}

type pgSessions struct {
	*postgresstore.PostgresStore
	db *sql.DB
}

func (p pgSessions) findRow(ctx context.Context, token string) ([]byte, time.Time, bool, error) {
	var data []byte
	var expiry time.Time
	err := p.db.QueryRowContext(ctx, `SELECT data, expiry FROM sessions WHERE token = $1 AND current_timestamp < expiry`, token).Scan(&data, &expiry)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, time.Time{}, false, nil
	}
	if err != nil {
		return nil, time.Time{}, false, fmt.Errorf("read session: %w", err)
	}
	return data, expiry, true, nil
}

func (p pgSessions) renewRow(ctx context.Context, token string, expiry time.Time) error {
	if _, err := p.db.ExecContext(ctx, `UPDATE sessions SET expiry = $2 WHERE token = $1 AND expiry < $2`, token, expiry); err != nil {
		return fmt.Errorf("push back a session's idle deadline: %w", err)
	}
	return nil
}

// sessionStore keeps the sessions it read while nothing changes them
// (keptSessions), and marks the errors of a database that did not answer,
// so a session that cannot be read while the database restarts is
// answered in words (and the person stays signed in once it is back).
type sessionStore struct {
	rows sessionRows
	kept *keptSessions
	log  *slog.Logger
}

// newSessionStore keeps sessions when changes is set, each for at most a
// quarter of idleTimeout: a used session is renewed at least that often
// (renewInterval), so its row's idle deadline is always further away.
func newSessionStore(rows sessionRows, changes *store.Changes, codec scs.Codec, idleTimeout time.Duration, log *slog.Logger) sessionStore {
	s := sessionStore{rows: rows, log: log}
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
// round trip to the sessions table as a wait on the database. A kept
// session due to be read again is answered from its copy and read again
// after the view, so a view waits on the database only for a session
// this replica does not hold.
func (s sessionStore) FindCtx(ctx context.Context, token string) ([]byte, bool, error) {
	found, _ := ctx.Value(foundSessionKey{}).(*foundSession)
	if s.kept != nil {
		if e, ok, refresh := s.kept.get(token); ok {
			found.set(e.expiry)
			if refresh {
				go s.refresh(servertiming.Detach(ctx), token)
			}
			return e.data, true, nil
		}
	}
	b, expiry, ok, err := s.read(ctx, token) // its query counts on the view's Server-Timing
	if ok {
		found.set(expiry)
	}
	return b, ok, err
}

// read reads a session's row, and keeps it.
func (s sessionStore) read(ctx context.Context, token string) ([]byte, time.Time, bool, error) {
	var m readMark
	if s.kept != nil {
		m = s.kept.mark()
	}
	b, expiry, found, err := s.rows.findRow(ctx, token)
	if err != nil {
		return nil, time.Time{}, false, store.MarkUnavailable(err)
	}
	if found && s.kept != nil {
		s.kept.keep(token, b, expiry, m)
	}
	return b, expiry, found, nil
}

// refresh reads a kept session again, after the view it was answered to.
func (s sessionStore) refresh(ctx context.Context, token string) {
	ctx, cancel := context.WithTimeout(ctx, backgroundTimeout)
	defer cancel()
	defer s.kept.refreshed(token)
	_, _, found, err := s.read(ctx, token)
	if err != nil {
		s.log.WarnContext(ctx, "read a kept session again", "err", err)
		return
	}
	if !found {
		s.kept.drop(token)
	}
}

// renew pushes back a session's idle deadline to expiry; a view calls it
// once it has answered.
func (s sessionStore) renew(ctx context.Context, token string, expiry time.Time) {
	ctx, cancel := context.WithTimeout(ctx, backgroundTimeout)
	defer cancel()
	if err := s.rows.renewRow(ctx, token, expiry); err != nil {
		s.log.WarnContext(ctx, "renew a session", "err", store.MarkUnavailable(err))
		return
	}
	if s.kept != nil {
		s.kept.renewed(token, expiry)
	}
}

func (s sessionStore) CommitCtx(ctx context.Context, token string, b []byte, expiry time.Time) error {
	s.forget(token)
	defer s.forget(token)
	t0 := time.Now()
	err := s.rows.Commit(token, b, expiry)
	servertiming.Add(ctx, servertiming.DB, time.Since(t0))
	return store.MarkUnavailable(err)
}

func (s sessionStore) DeleteCtx(ctx context.Context, token string) error {
	s.forget(token)
	defer s.forget(token)
	t0 := time.Now()
	err := s.rows.Delete(token)
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

// foundSessionKey carries a view's foundSession in its context.
type foundSessionKey struct{}

// foundSession is the idle deadline of the session row a view loaded,
// when the sessionStore read or kept it.
type foundSession struct {
	expiry time.Time
	known  bool
}

func (f *foundSession) set(expiry time.Time) {
	if f != nil {
		f.expiry, f.known = expiry, true
	}
}

// LoadSession is gin middleware that loads the session for the request
// and saves it (writing the cookie) just before the response is written.
// onError is called when the session store fails. A session whose only
// change is that its idle deadline is due to be pushed back is renewed
// after the response.
func LoadSession(sm *scs.SessionManager, onError func(*gin.Context, error)) gin.HandlerFunc {
	return func(c *gin.Context) {
		c.Writer.Header().Add("Vary", "Cookie")
		var token string
		if cookie, err := c.Request.Cookie(sm.Cookie.Name); err == nil {
			token = cookie.Value
		}
		found := &foundSession{}
		ctx, err := sm.Load(context.WithValue(c.Request.Context(), foundSessionKey{}, found), token)
		if err != nil {
			onError(c, err)
			c.Abort()
			return
		}
		c.Request = c.Request.WithContext(ctx)
		w := &sessionWriter{ResponseWriter: c.Writer, c: c, sm: sm, onError: onError, found: found,
			loadedToken: sm.Token(ctx), loaded: sessionValues(ctx, sm)}
		c.Writer = w
		c.Next()
		w.commit()
		if st, ok := sm.Store.(sessionStore); ok && !w.renewTo.IsZero() {
			go st.renew(servertiming.Detach(ctx), w.loadedToken, w.renewTo)
		}
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
	// loadedToken, loaded and found are the session as read from the
	// store, to tell a real change from scs's idle-timeout touch.
	loadedToken string
	loaded      map[string]any
	found       *foundSession
	// renewTo is the idle deadline to push the session's row back to
	// once the view has answered (zero: none).
	renewTo time.Time
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

// renewInterval is how long a used session goes without a renewal.
func renewInterval(sm *scs.SessionManager) time.Duration {
	if d := sm.IdleTimeout / 4; d < maxRenewInterval {
		return d
	}
	return maxRenewInterval
}

// changed reports whether the session must be written: its token or its
// values changed, or it was loaded from a store that does not tell its
// idle deadline (then every view pushes it back, as scs does).
func (w *sessionWriter) changed(ctx context.Context) bool {
	return w.loadedToken == "" || w.sm.Token(ctx) != w.loadedToken || !reflect.DeepEqual(sessionValues(ctx, w.sm), w.loaded) ||
		(w.sm.IdleTimeout > 0 && !w.found.known)
}

// renewal is the idle deadline to push an unchanged session back to, when
// it was last pushed back renewInterval ago or more. scs marks every
// loaded session modified when IdleTimeout is set, which would write the
// row on every page view.
func (w *sessionWriter) renewal(ctx context.Context, now time.Time) (time.Time, bool) {
	if w.sm.IdleTimeout <= 0 {
		return time.Time{}, false
	}
	to := minTime(now.Add(w.sm.IdleTimeout), w.sm.Deadline(ctx))
	return to, to.Sub(w.found.expiry) >= renewInterval(w.sm)
}

func (w *sessionWriter) commit() {
	if w.committed {
		return
	}
	w.committed = true
	ctx := w.c.Request.Context()
	switch w.sm.Status(ctx) {
	case scs.Modified:
		if !w.changed(ctx) {
			if to, due := w.renewal(ctx, time.Now()); due {
				w.renewTo = to
			}
			return
		}
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
