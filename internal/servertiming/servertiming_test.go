package servertiming

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHeaderNamesEachDependencyWaitedOnWithItsCalls(t *testing.T) {
	ctx, timing := Start(context.Background())
	Add(ctx, DB, 2*time.Millisecond)
	Add(ctx, DB, 3*time.Millisecond)
	Add(ctx, Prometheus, 10*time.Millisecond)
	Add(context.Background(), Kube, time.Second) // no request: counted nowhere

	ms, calls := Parse(timing.Header())
	assert.InDelta(t, 5, ms["db"], 0.01)
	assert.Equal(t, 2, calls["db"])
	assert.InDelta(t, 10, ms["prom"], 0.01)
	assert.Equal(t, 1, calls["prom"])
	assert.NotContains(t, ms, "kube", "a dependency not waited on is not named")
	assert.Contains(t, ms, "total")
}

func TestWorkLeftBehindCountsOnNoRequest(t *testing.T) {
	ctx, timing := Start(context.Background())
	ctx, cancel := context.WithCancel(ctx)
	detached := Detach(ctx)
	cancel()
	Add(detached, DB, time.Second)
	require.NoError(t, detached.Err(), "not cancelled with the request")
	_, calls := Parse(timing.Header())
	assert.NotContains(t, calls, "db")
}

func TestTransportCountsRoundTripsOfTheRequestsContext(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		time.Sleep(5 * time.Millisecond)
	}))
	defer srv.Close()
	client := &http.Client{Transport: Transport(Prometheus, nil)}
	ctx, timing := Start(context.Background())
	for range 2 {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		require.NoError(t, err)
		resp, err := client.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
	}
	ms, calls := Parse(timing.Header())
	assert.Equal(t, 2, calls["prom"])
	assert.GreaterOrEqual(t, ms["prom"], 10.0)
}
