package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/alexedwards/scs/v2"
	"github.com/gin-gonic/gin"
	"golang.org/x/sync/errgroup"

	"github.com/gantry-dev/gantry/internal/problem"
	"github.com/gantry-dev/gantry/internal/roster"
	"github.com/gantry-dev/gantry/internal/servertiming"
	"github.com/gantry-dev/gantry/internal/store"
)

// ErrInvalidToken is returned for a missing, unknown, expired or revoked API token.
var ErrInvalidToken = problem.New("the API token is missing, unknown, expired or revoked", problem.Problem{Kind: problem.Unauthenticated, Title: "Not signed in",
	Detail: "Sign in, or send a valid personal API token as \"Authorization: Bearer gty_…\". The token may be unknown, expired or revoked."})

// ErrReadOnlyToken refuses a request that would change something, made
// with a read-only API token.
var ErrReadOnlyToken = problem.New("the API token is read-only", problem.Problem{Kind: problem.Forbidden, Title: "Read-only token",
	Detail: "This API token is read-only: it may read (GET) but not launch, stop or change anything. Use a token made without \"read-only\" for this call."})

// DefaultTokenOwnerInactivity is how long a token keeps working after its
// owner's last sign-in, unless configured otherwise.
const DefaultTokenOwnerInactivity = 30 * 24 * time.Hour

// TokenOwnerError is an API token refused because of its owner: they have
// not signed in for too long, or at their last sign-in they were in no
// team and no admin group. It is an ErrInvalidToken.
type TokenOwnerError struct {
	// Inactive is how long the owner has not signed in, when that is the
	// reason; zero means the owner lost every team and admin group.
	Inactive time.Duration
	// Limit is the configured longest time without a sign-in.
	Limit time.Duration
}

func (e *TokenOwnerError) Error() string {
	if e.Inactive > 0 {
		return fmt.Sprintf("the API token's owner has not signed in for %s (the limit is %s)", inDays(e.Inactive), inDays(e.Limit))
	}
	return "the API token's owner was in no team and no admin group at their last sign-in"
}

// inDays words a duration in whole days ("1 day", "30 days"), rounding down,
// or in hours below a day.
func inDays(d time.Duration) string {
	switch days := int(d / (24 * time.Hour)); {
	case days == 1:
		return "1 day"
	case days > 1:
		return fmt.Sprintf("%d days", days)
	}
	return fmt.Sprintf("%d hours", int(d/time.Hour))
}

// Unwrap makes a TokenOwnerError an ErrInvalidToken.
func (e *TokenOwnerError) Unwrap() error { return ErrInvalidToken }

// Problem says why the token stopped and how it works again.
func (e *TokenOwnerError) Problem() problem.Problem {
	again := "It works again once its owner signs in as a member of a team or of the admins."
	if e.Inactive > 0 {
		again = "Sign in to the portal once to make it work again."
	}
	return problem.Problem{Kind: problem.Unauthenticated, Title: "Token paused",
		Detail: "This API token stopped working because " + e.Error() + ". " + again}
}

// Store is what authentication needs from the database.
type Store interface {
	TeamLister
	UserByID(ctx context.Context, id int64) (store.User, error)
	APITokenByHash(ctx context.Context, hash []byte) (store.APIToken, error)
	UserByTokenHash(ctx context.Context, hash []byte) (store.User, error)
	TouchAPIToken(ctx context.Context, id int64, at time.Time) error
}

// Authenticator finds the current user of a request, from the session or
// from a bearer token.
type Authenticator struct {
	Sessions *scs.SessionManager
	Store    Store
	Resolver Resolver
	Now      func() time.Time
	Log      *slog.Logger
	// TokenOwnerInactivity is how long after its owner's last sign-in an
	// API token stops working; zero means DefaultTokenOwnerInactivity.
	TokenOwnerInactivity time.Duration

	// users keeps session users for SessionUserTTL.
	users userCache
	// touches are the tokens' last uses this replica recorded.
	touches tokenTouches
}

// ForgetUsers drops every cached session user, so that a change to teams
// or admin groups made on this replica shows on the next page view.
func (a *Authenticator) ForgetUsers() { a.users.forgetAll() }

// StartSession rotates the session token (against fixation) and records the
// signed-in user's account id in it.
func (a *Authenticator) StartSession(ctx context.Context, userID int64, rawIDToken string) error {
	if err := a.Sessions.RenewToken(ctx); err != nil {
		return fmt.Errorf("renew session of user %d: %w", userID, err)
	}
	a.Sessions.Put(ctx, keyUserID, userID)
	a.Sessions.Put(ctx, keyIDToken, rawIDToken)
	// The sign-in may have changed the user's groups.
	a.users.forget(userID)
	return nil
}

// EndSession destroys the session and returns the ID token it held, for
// the IdP logout hint.
func (a *Authenticator) EndSession(ctx context.Context) (string, error) {
	idToken := a.Sessions.GetString(ctx, keyIDToken)
	a.users.forget(a.Sessions.GetInt64(ctx, keyUserID))
	if err := a.Sessions.Destroy(ctx); err != nil {
		return "", fmt.Errorf("destroy session: %w", err)
	}
	return idToken, nil
}

// SessionUser is middleware that attaches the session's user, if the
// session has one. It does not require a user; see the web package for that.
func (a *Authenticator) SessionUser(onError func(*gin.Context, error)) gin.HandlerFunc {
	return func(c *gin.Context) {
		ctx := c.Request.Context()
		userID := a.Sessions.GetInt64(ctx, keyUserID)
		if userID == 0 {
			c.Next()
			return
		}
		u, err := a.load(ctx, userID)
		if errors.Is(err, store.ErrNotFound) {
			// The user row is gone: the session is worthless.
			_ = a.Sessions.Destroy(ctx)
			c.Next()
			return
		}
		if err != nil {
			onError(c, err)
			c.Abort()
			return
		}
		SetCurrentUser(c, u)
		c.Next()
	}
}

// BearerToken is middleware for the API: it requires an
// `Authorization: Bearer gty_...` header naming an active token, and
// attaches the token owner's identity, rebuilt from the groups of their
// last login with teams resolved now. Failures are answered with 401; a
// read-only token asking for anything but GET or HEAD with ErrReadOnlyToken.
func (a *Authenticator) BearerToken(onError func(*gin.Context, error)) gin.HandlerFunc {
	return func(c *gin.Context) {
		u, err := a.authenticateBearer(c.Request.Context(), c.GetHeader("Authorization"))
		if err != nil {
			if errors.Is(err, ErrInvalidToken) {
				c.Header("WWW-Authenticate", `Bearer realm="gantry"`)
			}
			onError(c, err)
			c.Abort()
			return
		}
		if u.ReadOnly && c.Request.Method != http.MethodGet && c.Request.Method != http.MethodHead {
			onError(c, fmt.Errorf("%s %s with token %d: %w", c.Request.Method, c.Request.URL.Path, u.TokenID, ErrReadOnlyToken))
			c.Abort()
			return
		}
		SetCurrentUser(c, u)
		c.Next()
	}
}

// HasBearer reports whether the request carries a bearer token.
func HasBearer(r *http.Request) bool {
	_, ok := bearer(r.Header.Get("Authorization"))
	return ok
}

func (a *Authenticator) authenticateBearer(ctx context.Context, header string) (*User, error) {
	secret, ok := bearer(header)
	if !ok || !looksLikeToken(secret) {
		return nil, ErrInvalidToken
	}
	// The token, its owner and the teams are read at once: one round
	// trip's wait instead of three in turn (an API launch waited for each
	// behind the API server's work on the same cores), when they are not
	// kept (store.KeepReads): a revoked token fails on its next request
	// to this replica, and to the others once the database's notice of
	// the revocation reaches them.
	hash := HashToken(secret)
	var (
		g     errgroup.Group
		su    store.User
		teams []roster.Team
		owner error
	)
	g.Go(func() error {
		su, owner = a.Store.UserByTokenHash(ctx, hash)
		return nil
	})
	g.Go(func() (err error) {
		teams, err = a.Resolver.Teams.ActiveTeams(ctx)
		return err
	})
	tok, err := a.Store.APITokenByHash(ctx, hash)
	teamsErr := g.Wait()
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrInvalidToken
	}
	if err != nil {
		return nil, fmt.Errorf("authenticate API token: %w", err)
	}
	now := a.now()
	if !tok.Active(now) {
		return nil, ErrInvalidToken
	}
	if errors.Is(owner, store.ErrNotFound) || owner == nil && su.ID != tok.UserID {
		return nil, ErrInvalidToken
	}
	if owner != nil {
		return nil, fmt.Errorf("authenticate API token %d: %w", tok.ID, owner)
	}
	if teamsErr != nil {
		return nil, fmt.Errorf("authenticate API token %d: resolve teams of %s: %w", tok.ID, su.Username, teamsErr)
	}
	limit := a.TokenOwnerInactivity
	if limit <= 0 {
		limit = DefaultTokenOwnerInactivity
	}
	if idle := now.Sub(su.LastLoginAt); idle > limit {
		return nil, fmt.Errorf("API token %d of %s: %w", tok.ID, su.Username, &TokenOwnerError{Inactive: idle, Limit: limit})
	}
	u := a.Resolver.resolveWith(su, teams)
	if !u.HasAccess() {
		return nil, fmt.Errorf("API token %d of %s: %w", tok.ID, su.Username, &TokenOwnerError{Limit: limit})
	}
	u.TokenID = tok.ID
	u.ReadOnly = tok.ReadOnly
	// "Last used" is shown to the minute: a script calling many times a
	// second must not cost a write per call. It is written after the
	// request has its answer: the call does not wait for it.
	if a.touches.due(tok.ID, tok.LastUsedAt, now) {
		go a.touch(servertiming.Detach(ctx), tok.ID, now)
	}
	return u, nil
}

// touch records token id's use at at.
func (a *Authenticator) touch(ctx context.Context, id int64, at time.Time) {
	ctx, cancel := context.WithTimeout(ctx, tokenTouchTimeout)
	defer cancel()
	if err := a.Store.TouchAPIToken(ctx, id, at); err != nil {
		// Usage tracking must not lock people out; the audit log still names the token.
		a.Log.WarnContext(ctx, "record API token use", "token", id, "err", err)
		a.touches.failed(id, at)
	}
}

const (
	// tokenTouchEvery is how stale a token's recorded last use may get.
	tokenTouchEvery = time.Minute
	// tokenTouchTimeout bounds the write of a token's use.
	tokenTouchTimeout = 10 * time.Second
	// maxTokenTouches is how many tokens' uses tokenTouches holds before
	// it forgets those recorded over tokenTouchEvery ago.
	maxTokenTouches = 4096
)

// tokenTouches are the uses of tokens this replica recorded last: the
// token a request reads is kept (store.KeepReads) and its LastUsedAt may
// be older than its row's, which would record a use on every call.
type tokenTouches struct {
	mu sync.Mutex
	at map[int64]time.Time
}

// due reports whether token id's use at now is to be recorded (its row's
// last use and this replica's last record of one are tokenTouchEvery old
// or unknown), and notes it as recorded.
func (t *tokenTouches) due(id int64, row *time.Time, now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	last := t.at[id]
	if row != nil && row.After(last) {
		last = *row
	}
	if !last.IsZero() && now.Sub(last) < tokenTouchEvery {
		return false
	}
	if t.at == nil {
		t.at = map[int64]time.Time{}
	}
	if len(t.at) >= maxTokenTouches {
		for id, at := range t.at {
			if now.Sub(at) >= tokenTouchEvery {
				delete(t.at, id)
			}
		}
	}
	t.at[id] = now
	return true
}

// failed forgets the record of token id's use at at, which failed: the
// next call records it again.
func (t *tokenTouches) failed(id int64, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.at[id].Equal(at) {
		delete(t.at, id)
	}
}

// load returns the session's user, read and resolved at most once per
// SessionUserTTL per replica.
func (a *Authenticator) load(ctx context.Context, userID int64) (*User, error) {
	// Wall-clock time, not a.Now: a test's frozen clock must not freeze the cache.
	now := time.Now()
	if u, ok := a.users.get(userID, now); ok {
		return u, nil
	}
	su, err := a.Store.UserByID(ctx, userID)
	if err != nil {
		return nil, fmt.Errorf("load user: %w", err)
	}
	u, err := a.Resolver.Resolve(ctx, su)
	if err != nil {
		return nil, err
	}
	a.users.put(u, now)
	return u, nil
}

func (a *Authenticator) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

func bearer(header string) (string, bool) {
	scheme, value, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	value = strings.TrimSpace(value)
	return value, value != ""
}
