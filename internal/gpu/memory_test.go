package gpu

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// prometheusAnswering serves /api/v1/query with result (a JSON vector's
// items) and records the queries it was asked.
func prometheusAnswering(t *testing.T, result string) (*Metrics, *[]string) {
	t.Helper()
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.NoError(t, r.ParseForm())
		asked = append(asked, r.Form.Get("query")+" @"+r.Form.Get("time"))
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[%s]}}`, result)
	}))
	t.Cleanup(srv.Close)
	m, err := New(srv.URL)
	require.NoError(t, err)
	return m, &asked
}

// The peak is the highest working set of that one container over its run,
// read a scrape interval past the kill; without samples it is unknown.
func TestContainerMemoryPeak(t *testing.T) {
	start := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	end := start.Add(10 * time.Minute)
	peak := int64(17072495001) // 15.9Gi
	m, asked := prometheusAnswering(t, fmt.Sprintf(`{"metric":{},"value":[%d,"%d"]}`, end.Unix(), peak))
	got, ok, err := m.ContainerMemoryPeak(context.Background(), "team-nlp", "train-0", "main", start, end)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, peak, got)
	require.Len(t, *asked, 1)
	assert.Equal(t, fmt.Sprintf(`max(max_over_time(container_memory_working_set_bytes{namespace="team-nlp",pod="train-0",container="main"}[661s])) @%d`, end.Add(time.Minute).Unix()), (*asked)[0])

	empty, _ := prometheusAnswering(t, "")
	_, ok, err = empty.ContainerMemoryPeak(context.Background(), "team-nlp", "train-0", "main", start, end)
	require.NoError(t, err)
	assert.False(t, ok, "no samples: the peak is unknown")
}
