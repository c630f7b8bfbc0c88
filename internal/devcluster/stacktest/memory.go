package stacktest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/gantry-dev/gantry/internal/gpu"
)

// ContainerMemoryPeak is the most working set (bytes) Prometheus holds
// for the container over the last 15 minutes, as kwok reported it; ok is
// false without samples.
func (e *Env) ContainerMemoryPeak(t testing.TB, namespace, pod, container string) (bytes int64, ok bool) {
	t.Helper()
	v, ok := e.PromScalar(t, fmt.Sprintf(`max(max_over_time(%s{namespace=%q,pod=%q,container=%q}[15m]))`, gpu.MetricContainerMemory, namespace, pod, container))
	return int64(v), ok
}

// PromScalar is the value of the one sample an instant query gives the
// stack's Prometheus now; ok is false when it gives none.
func (e *Env) PromScalar(t testing.TB, query string) (v float64, ok bool) {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(e.PrometheusURL + "/api/v1/query?query=" + url.QueryEscape(query))
	if err != nil {
		t.Fatalf("stacktest: query Prometheus: %v", err)
	}
	defer resp.Body.Close()
	var body struct {
		Data struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("stacktest: decode Prometheus answer to %s: %v", query, err)
	}
	if len(body.Data.Result) == 0 {
		return 0, false
	}
	s, _ := body.Data.Result[0].Value[1].(string)
	v, err = strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("stacktest: Prometheus value %q: %v", s, err)
	}
	return v, true
}
