package proxy

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gantry-dev/gantry/internal/store"
)

// UsageStore keeps endpoints' hourly counts.
type UsageStore interface {
	AddEndpointUsage(ctx context.Context, rows []store.EndpointUsageHour) error
}

// Call is one request an endpoint served through the proxy.
type Call struct {
	Team, Name string
	// Status is the answer's status code; 502 when the endpoint did not answer.
	Status  int
	Latency time.Duration
	// Tokens from the answer's OpenAI-style usage, 0 when it had none.
	PromptTokens, CompletionTokens int64
}

// Failed reports whether the call counts as an error: the endpoint failed
// (5xx) or did not answer. A caller's mistake (4xx) is not the endpoint's.
func (c Call) Failed() bool { return c.Status >= 500 }

// latencyWindow is how many recent latencies per endpoint the job page's
// percentiles are computed from.
const latencyWindow = 1000

// Usage counts what endpoints serve: Prometheus series for /metrics,
// figures for the job page, and hourly rows written to Postgres by Flush.
type Usage struct {
	store    UsageStore
	now      func() time.Time
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	tokens   *prometheus.CounterVec

	mu      sync.Mutex
	pending map[usageKey]*store.EndpointUsageHour
	stats   map[endpointKey]*endpointStats
}

type endpointKey struct{ team, name string }

type usageKey struct {
	endpointKey
	hour time.Time
}

type endpointStats struct {
	requests, errors int64
	recent           []time.Duration // ring of the last latencyWindow latencies
	next             int
}

// NewUsage registers the endpoint metrics; now is time.Now when nil.
func NewUsage(reg prometheus.Registerer, st UsageStore, now func() time.Time) (*Usage, error) {
	if now == nil {
		now = time.Now
	}
	u := &Usage{store: st, now: now, pending: map[usageKey]*store.EndpointUsageHour{}, stats: map[endpointKey]*endpointStats{},
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gantry_endpoint_requests_total",
			Help: "Requests to inference endpoints through the portal's proxy, by team, endpoint and status code.",
		}, []string{"team", "endpoint", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "gantry_endpoint_request_duration_seconds",
			Help:    "Time from a request to the end of its answer (streams included), by team and endpoint.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120},
		}, []string{"team", "endpoint"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gantry_endpoint_tokens_total",
			Help: "Tokens inference endpoints reported in their answers' usage, by team, endpoint and type (prompt, completion).",
		}, []string{"team", "endpoint", "type"}),
	}
	for _, c := range []prometheus.Collector{u.requests, u.latency, u.tokens} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register endpoint metrics: %w", err)
		}
	}
	return u, nil
}

// Record counts one call.
func (u *Usage) Record(c Call) {
	u.requests.WithLabelValues(c.Team, c.Name, strconv.Itoa(c.Status)).Inc()
	u.latency.WithLabelValues(c.Team, c.Name).Observe(c.Latency.Seconds())
	if c.PromptTokens > 0 {
		u.tokens.WithLabelValues(c.Team, c.Name, "prompt").Add(float64(c.PromptTokens))
	}
	if c.CompletionTokens > 0 {
		u.tokens.WithLabelValues(c.Team, c.Name, "completion").Add(float64(c.CompletionTokens))
	}
	ek := endpointKey{c.Team, c.Name}
	k := usageKey{ek, u.now().UTC().Truncate(time.Hour)}
	u.mu.Lock()
	defer u.mu.Unlock()
	row := u.pending[k]
	if row == nil {
		row = &store.EndpointUsageHour{Team: c.Team, Name: c.Name, Hour: k.hour}
		u.pending[k] = row
	}
	row.Requests++
	row.PromptTokens += c.PromptTokens
	row.CompletionTokens += c.CompletionTokens
	st := u.stats[ek]
	if st == nil {
		st = &endpointStats{}
		u.stats[ek] = st
	}
	st.requests++
	if c.Failed() {
		row.Errors++
		st.errors++
	}
	if len(st.recent) < latencyWindow {
		st.recent = append(st.recent, c.Latency)
	} else {
		st.recent[st.next] = c.Latency
		st.next = (st.next + 1) % latencyWindow
	}
}

// Stats are an endpoint's figures since this portal replica started.
type Stats struct {
	Requests int64
	Errors   int64
	// ErrorRate is Errors/Requests, 0 without requests.
	ErrorRate float64
	// P50 and P99 are over the last requests (up to 1,000).
	P50, P99 time.Duration
}

// Stats returns the endpoint's figures.
func (u *Usage) Stats(team, name string) Stats {
	u.mu.Lock()
	st := u.stats[endpointKey{team, name}]
	var out Stats
	var lat []time.Duration
	if st != nil {
		out.Requests, out.Errors = st.requests, st.errors
		lat = slices.Clone(st.recent)
	}
	u.mu.Unlock()
	if out.Requests > 0 {
		out.ErrorRate = float64(out.Errors) / float64(out.Requests)
	}
	if len(lat) > 0 {
		slices.Sort(lat)
		out.P50 = lat[(len(lat)-1)*50/100]
		out.P99 = lat[(len(lat)-1)*99/100]
	}
	return out
}

// Flush adds the counts gathered since the last flush to the hourly rows
// in Postgres; on failure they are kept for the next one.
func (u *Usage) Flush(ctx context.Context) error {
	u.mu.Lock()
	rows := make([]store.EndpointUsageHour, 0, len(u.pending))
	for _, r := range u.pending {
		rows = append(rows, *r)
	}
	taken := u.pending
	u.pending = map[usageKey]*store.EndpointUsageHour{}
	u.mu.Unlock()
	if err := u.store.AddEndpointUsage(ctx, rows); err != nil {
		u.mu.Lock()
		for k, r := range taken {
			if cur := u.pending[k]; cur != nil {
				cur.Requests += r.Requests
				cur.Errors += r.Errors
				cur.PromptTokens += r.PromptTokens
				cur.CompletionTokens += r.CompletionTokens
			} else {
				u.pending[k] = r
			}
		}
		u.mu.Unlock()
		return fmt.Errorf("flush endpoint usage: %w", err)
	}
	return nil
}

// Run flushes every interval until ctx ends, then once more.
func (u *Usage) Run(ctx context.Context, every time.Duration, log *slog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			if err := u.Flush(fctx); err != nil {
				log.Error("flush endpoint usage at shutdown", "err", err)
			}
			cancel()
			return
		case <-t.C:
			if err := u.Flush(ctx); err != nil {
				log.Warn("flush endpoint usage", "err", err)
			}
		}
	}
}
