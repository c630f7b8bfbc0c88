package auth

import (
	"context"
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/alexedwards/scs/v2"
	"github.com/alexedwards/scs/v2/memstore"
	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gantry-dev/gantry/internal/devcluster/stacktest"
)

// session returns a context carrying a fresh session of sm.
func session(t *testing.T, sm *scs.SessionManager) context.Context {
	t.Helper()
	ctx, err := sm.Load(context.Background(), "")
	require.NoError(t, err)
	return ctx
}

func memSessions() *scs.SessionManager {
	sm := scs.New()
	sm.Store = memstore.New()
	return sm
}

func TestVerifyIDToken(t *testing.T) {
	issuer := stacktest.IdP(t)
	gantry := newRP(t, issuer, "gantry", "gantry-dev-secret", nil)
	other := newRP(t, issuer, "other-app", "other-app-secret", nil)
	ahead := newRP(t, issuer, "gantry", "gantry-dev-secret", func() time.Time { return time.Now().Add(2 * time.Hour) })

	good := idToken(t, gantry, "alice", "nonce-1")
	forOther := idToken(t, other, "alice", "nonce-1")

	t.Run("valid", func(t *testing.T) {
		id, err := gantry.VerifyIDToken(context.Background(), good, "nonce-1")
		require.NoError(t, err)
		assert.Equal(t, "alice", id.Username)
		assert.Equal(t, []string{"vision-researchers"}, id.Groups)
		assert.Equal(t, good, id.RawIDToken)
	})
	cases := map[string]struct {
		rp      *OIDC
		raw     string
		nonce   string
		wantErr error
		check   func(t *testing.T, err error)
	}{
		"wrong nonce": {rp: gantry, raw: good, nonce: "nonce-2", wantErr: ErrNonceMismatch},
		"empty nonce": {rp: gantry, raw: good, nonce: "", wantErr: ErrNonceMismatch},
		"wrong audience": {rp: gantry, raw: forOther, nonce: "nonce-1", wantErr: ErrIDTokenInvalid, check: func(t *testing.T, err error) {
			assert.Contains(t, err.Error(), "audience")
		}},
		"expired": {rp: ahead, raw: good, nonce: "nonce-1", wantErr: ErrIDTokenInvalid, check: func(t *testing.T, err error) {
			var expired *oidc.TokenExpiredError
			assert.True(t, errors.As(err, &expired), "%v", err)
		}},
		"tampered signature": {rp: gantry, raw: good[:len(good)-4] + "AAAA", nonce: "nonce-1", wantErr: ErrIDTokenInvalid},
		"not a JWT":          {rp: gantry, raw: "nope", nonce: "nonce-1", wantErr: ErrIDTokenInvalid},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := tc.rp.VerifyIDToken(context.Background(), tc.raw, tc.nonce)
			require.ErrorIs(t, err, tc.wantErr)
			if tc.check != nil {
				tc.check(t, err)
			}
		})
	}
}

func TestCompleteLogin(t *testing.T) {
	issuer := stacktest.IdP(t)
	rp := newRP(t, issuer, "gantry", "gantry-dev-secret", nil)
	sm := memSessions()

	t.Run("success, then replay refused", func(t *testing.T) {
		ctx := session(t, sm)
		authURL, err := rp.BeginLogin(ctx, sm, "/profile")
		require.NoError(t, err)
		q := codeFor(t, authURL, "bob")
		id, next, err := rp.CompleteLogin(ctx, sm, q)
		require.NoError(t, err)
		assert.Equal(t, "bob", id.Username)
		assert.Equal(t, []string{"vision-leads"}, id.Groups)
		assert.Equal(t, "/profile", next)

		_, _, err = rp.CompleteLogin(ctx, sm, q)
		assert.ErrorIs(t, err, ErrNoLoginInProgress)
	})
	t.Run("wrong nonce in the session", func(t *testing.T) {
		ctx := session(t, sm)
		authURL, err := rp.BeginLogin(ctx, sm, "/")
		require.NoError(t, err)
		q := codeFor(t, authURL, "alice")
		sm.Put(ctx, keyNonce, "a-different-login-attempt")
		_, _, err = rp.CompleteLogin(ctx, sm, q)
		assert.ErrorIs(t, err, ErrNonceMismatch)
	})
	t.Run("tampered state", func(t *testing.T) {
		ctx := session(t, sm)
		authURL, err := rp.BeginLogin(ctx, sm, "/")
		require.NoError(t, err)
		q := codeFor(t, authURL, "alice")
		q.Set("state", "forged")
		_, _, err = rp.CompleteLogin(ctx, sm, q)
		assert.ErrorIs(t, err, ErrStateMismatch)
	})
	t.Run("wrong PKCE verifier", func(t *testing.T) {
		ctx := session(t, sm)
		authURL, err := rp.BeginLogin(ctx, sm, "/")
		require.NoError(t, err)
		q := codeFor(t, authURL, "alice")
		sm.Put(ctx, keyVerifier, "not-the-verifier-of-this-challenge-0123456789abcdef")
		_, _, err = rp.CompleteLogin(ctx, sm, q)
		assert.ErrorIs(t, err, ErrCodeExchange)
	})
	t.Run("IdP error", func(t *testing.T) {
		ctx := session(t, sm)
		_, err := rp.BeginLogin(ctx, sm, "/")
		require.NoError(t, err)
		_, _, err = rp.CompleteLogin(ctx, sm, url.Values{"error": {"access_denied"}})
		assert.ErrorIs(t, err, ErrProviderRefused)
	})
}

func TestLogoutURL(t *testing.T) {
	rp := newRP(t, stacktest.IdP(t), "gantry", "gantry-dev-secret", nil)
	u, err := url.Parse(rp.LogoutURL("the-id-token"))
	require.NoError(t, err)
	assert.Equal(t, "/session/end", u.Path)
	assert.Equal(t, "the-id-token", u.Query().Get("id_token_hint"))
	assert.Equal(t, "http://127.0.0.1:38123/", u.Query().Get("post_logout_redirect_uri"))
	assert.Equal(t, "gantry", u.Query().Get("client_id"))

	rp.endSession = ""
	assert.Empty(t, rp.LogoutURL("x"), "no end_session_endpoint: local logout only")
}
