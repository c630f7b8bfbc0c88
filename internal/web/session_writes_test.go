package web

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gantry-dev/gantry/internal/auth"
)

// sessionRow is the session's row version (xmin changes on every write)
// and expiry in the sessions table.
func sessionRow(t *testing.T, p *portal, token string) (version string, expiry time.Time) {
	t.Helper()
	err := p.Store.SQL().QueryRowContext(context.Background(), `SELECT xmin::text, expiry FROM sessions WHERE token = $1`, token).Scan(&version, &expiry)
	require.NoError(t, err)
	return version, expiry
}

// sessionData is what the sessions table holds of the session.
func sessionData(t *testing.T, p *portal, token string) []byte {
	t.Helper()
	var data []byte
	require.NoError(t, p.Store.SQL().QueryRowContext(context.Background(), `SELECT data FROM sessions WHERE token = $1`, token).Scan(&data))
	return data
}

// TestPageViewsDoNotWriteTheSession: after sign-in, a signed-in person's
// page views write nothing to the sessions table until the idle deadline
// is due to be pushed back (at most once a minute), and a session in use
// outlives its idle timeout.
func TestPageViewsDoNotWriteTheSession(t *testing.T) {
	t.Run("views within a minute", func(t *testing.T) {
		p := startPortal(t, portalOptions{}) // 30-minute idle timeout
		b := newBrowser(t)
		require.Equal(t, "alice", b.login(p.URL, "/profile", "alice").text("user-name"))
		token := b.cookie(p.URL, auth.SessionCookieName).Value
		version, expiry := sessionRow(t, p, token)
		for range 50 {
			require.Equal(t, "alice", b.get(p.URL+"/profile").text("user-name"))
			status, me := b.me(p.URL, "")
			require.Equal(t, http.StatusOK, status)
			require.Equal(t, "alice", me.Username)
		}
		after, afterExpiry := sessionRow(t, p, token)
		assert.Equal(t, version, after, "100 page views after sign-in wrote the session row")
		assert.Equal(t, expiry, afterExpiry)
		assert.Equal(t, token, b.cookie(p.URL, auth.SessionCookieName).Value, "same session")
	})

	t.Run("idle deadline pushed back while in use", func(t *testing.T) {
		// A 2 s idle timeout renews at most every 0.5 s (a quarter of it).
		p := startPortal(t, portalOptions{idleTimeout: 2 * time.Second})
		b := newBrowser(t)
		require.Equal(t, "alice", b.login(p.URL, "/", "alice").text("user-name"))
		token := b.cookie(p.URL, auth.SessionCookieName).Value
		_, first := sessionRow(t, p, token)
		data := sessionData(t, p, token)
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			status, _ := b.me(p.URL, "")
			require.Equal(t, http.StatusOK, status, "a session in use stays signed in past its idle timeout")
			time.Sleep(300 * time.Millisecond)
		}
		_, last := sessionRow(t, p, token)
		assert.True(t, last.After(first.Add(2*time.Second)), "idle deadline %s pushed back from %s", last, first)
		assert.Equal(t, data, sessionData(t, p, token), "only the deadline is written: no replica reads the session again")
	})
}
