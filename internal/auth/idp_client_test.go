package auth

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A sign-in code is redeemed with a POST, which Go does not send again on a
// kept connection the server has closed. The identity provider's client
// therefore makes a new connection for a request after the connection has
// been idle for longer than idleIdentityProviderConn, shorter than the 5 s
// after which Node's HTTP server (the dev IdP's) closes idle ones.
func TestIdentityProviderClientDoesNotReuseAConnectionIdleTooLong(t *testing.T) {
	require.Less(t, idleIdentityProviderConn, 5*time.Second, "shorter than Node's keep-alive timeout")
	var conns atomic.Int32
	idp := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"access_token":"x"}`))
	}))
	idp.Config.IdleTimeout = 5 * time.Second
	idp.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	idp.Start()
	defer idp.Close()

	client := identityProviderClient()
	post := func() {
		resp, err := client.Post(idp.URL+"/token", "application/x-www-form-urlencoded", strings.NewReader("code=c"))
		require.NoError(t, err)
		_, err = io.Copy(io.Discard, resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
	}
	post()
	post()
	assert.EqualValues(t, 1, conns.Load(), "a connection used again at once")
	time.Sleep(idleIdentityProviderConn + 500*time.Millisecond)
	post()
	assert.EqualValues(t, 2, conns.Load(), "a new connection after the last was idle past idleIdentityProviderConn")
}
