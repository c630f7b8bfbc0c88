package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/alexedwards/scs/v2"
	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/store"
)

// ErrInvalidToken is returned for a missing, unknown, expired or revoked API token.
var ErrInvalidToken = errors.New("the API token is missing, unknown, expired or revoked")

// Store is what authentication needs from the database.
type Store interface {
	TeamLister
	UserByUsername(ctx context.Context, username string) (store.User, error)
	APITokenByHash(ctx context.Context, hash []byte) (store.APIToken, error)
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
}

// StartSession rotates the session token (against fixation) and records the
// signed-in user in it.
func (a *Authenticator) StartSession(ctx context.Context, username, rawIDToken string) error {
	if err := a.Sessions.RenewToken(ctx); err != nil {
		return fmt.Errorf("renew session of %s: %w", username, err)
	}
	a.Sessions.Put(ctx, keyUsername, username)
	a.Sessions.Put(ctx, keyIDToken, rawIDToken)
	return nil
}

// EndSession destroys the session and returns the ID token it held, for
// the IdP logout hint.
func (a *Authenticator) EndSession(ctx context.Context) (string, error) {
	idToken := a.Sessions.GetString(ctx, keyIDToken)
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
		username := a.Sessions.GetString(ctx, keyUsername)
		if username == "" {
			c.Next()
			return
		}
		u, err := a.load(ctx, username)
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
// last login with teams resolved now. Failures are answered with 401.
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
	tok, err := a.Store.APITokenByHash(ctx, HashToken(secret))
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
	u, err := a.load(ctx, tok.Username)
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrInvalidToken
	}
	if err != nil {
		return nil, fmt.Errorf("authenticate API token %d: %w", tok.ID, err)
	}
	u.TokenID = tok.ID
	if err := a.Store.TouchAPIToken(ctx, tok.ID, now); err != nil {
		// Usage tracking must not lock people out; the audit log still names the token.
		a.Log.WarnContext(ctx, "record API token use", "token", tok.ID, "err", err)
	}
	return u, nil
}

func (a *Authenticator) load(ctx context.Context, username string) (*User, error) {
	su, err := a.Store.UserByUsername(ctx, username)
	if err != nil {
		return nil, fmt.Errorf("load user: %w", err)
	}
	return a.Resolver.Resolve(ctx, su)
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
