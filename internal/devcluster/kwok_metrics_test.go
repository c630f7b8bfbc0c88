package devcluster

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A kwok that kept no Metric route (404 on the DCGM path) has the Metric it
// does not serve touched, after its time to read it and once however often
// it is checked meanwhile; the
// check passes once kwok serves every path, and the check alone (no touch)
// only tells.
func TestKwokMetricsCheckTouchesTheMetricsKwokDoesNotServe(t *testing.T) {
	var (
		mu      sync.Mutex
		served  = map[string]bool{resourceMetricsPath("gpu-0"): true}
		touched []string
	)
	kwok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if !served[r.URL.Path] {
			http.NotFound(w, r)
		}
	}))
	defer kwok.Close()

	only := kwokMetricsCheck(kwok.URL, "gpu-0", nil, 0)
	assert.ErrorIs(t, only(t.Context()), errMetricNotServed)

	const every = 100 * time.Millisecond
	check := kwokMetricsCheck(kwok.URL, "gpu-0", func(_ context.Context, name string) error {
		mu.Lock()
		defer mu.Unlock()
		touched = append(touched, name)
		return nil
	}, every)
	require.ErrorIs(t, check(t.Context()), errMetricNotServed)
	assert.Empty(t, touched, "kwok gets its time to read its Metric objects before they are touched")
	time.Sleep(every)
	err := check(t.Context())
	require.ErrorIs(t, err, errMetricNotServed)
	assert.Contains(t, err.Error(), dcgmMetricName)
	require.ErrorIs(t, check(t.Context()), errMetricNotServed)
	assert.Equal(t, []string{dcgmMetricName}, touched, "touched once within every, and only the Metric not served")

	mu.Lock()
	served[dcgmMetricsPath("gpu-0")] = true
	mu.Unlock()
	assert.NoError(t, check(t.Context()))
	assert.NoError(t, only(t.Context()))
}

// Any answer but 200 and 404 is an error of its own, not a missing route.
func TestKwokMetricsServedReportsOtherFailures(t *testing.T) {
	kwok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer kwok.Close()
	_, err := kwokMetricsServed(t.Context(), kwok.URL, "gpu-0")
	require.Error(t, err)
	assert.NotErrorIs(t, err, errMetricNotServed)
	assert.Contains(t, err.Error(), "500")
}
