package web

import (
	"fmt"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// httpMetrics counts requests and their latency by route template, so
// /profile/tokens/:id/revoke is one series whatever the id.
type httpMetrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	// jobGPU counts the job pages that showed a running job's GPU figures,
	// those that showed the figures of a moment ago (more than a scrape
	// interval old, newer ones on their way), and those that showed them
	// as on their way (Prometheus slower than the page's wait).
	jobGPU *prometheus.CounterVec
}

func newHTTPMetrics(reg prometheus.Registerer) (*httpMetrics, error) {
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gantry_http_requests_total",
			Help: "HTTP requests handled, by method, route template and status code.",
		}, []string{"method", "route", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "gantry_http_request_duration_seconds",
			Help:    "HTTP request latency, by method and route template.",
			Buckets: prometheus.DefBuckets,
		}, []string{"method", "route"}),
		jobGPU: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gantry_job_page_gpu_figures_total",
			Help: "Job status panels with GPU figures, by outcome: shown, earlier (the run's figures of up to a minute ago while newer ones are read), chart_pending (the figures without the utilization chart, which Prometheus had not answered within --prometheus-wait), or pending (no figures within it).",
		}, []string{"outcome"}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.latency, m.jobGPU} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register HTTP metrics: %w", err)
		}
	}
	return m, nil
}

func (m *httpMetrics) middleware(c *gin.Context) {
	start := time.Now()
	c.Next()
	route := c.FullPath()
	if route == "" {
		route = "unmatched"
	}
	m.requests.WithLabelValues(c.Request.Method, route, strconv.Itoa(c.Writer.Status())).Inc()
	m.latency.WithLabelValues(c.Request.Method, route).Observe(time.Since(start).Seconds())
}

func (m *httpMetrics) handler(g prometheus.Gatherer) gin.HandlerFunc {
	h := promhttp.HandlerFor(g, promhttp.HandlerOpts{})
	return gin.WrapH(h)
}
