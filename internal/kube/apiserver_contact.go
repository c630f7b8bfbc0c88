package kube

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// APIServerContact knows when this process last heard from the Kubernetes
// API server, so pages served from the informer caches can say they may be
// out of date. It learns from every answer the informers' requests get,
// from their failures, and from a cheap probe of /readyz that runs fast
// while the server does not answer.
//
// Its Transport also keeps the informers from backing off: client-go's
// reflectors wait up to 30–60 s between attempts after connection errors,
// and this client-go does not let an informer choose its backoff. The
// transport holds an informer's GET while the API server is unreachable
// and sends it again as soon as the probe sees the server ready, so the
// reflector never sees the outage and resumes at once.
type APIServerContact struct {
	probe func(ctx context.Context) error
	now   func() time.Time
	log   *slog.Logger
	// every is the probe's period while the server answers, retry while it
	// does not; timeout bounds each probe.
	every, retry, timeout time.Duration
	// kick wakes the probe loop when a request fails.
	kick chan struct{}

	mu         sync.Mutex
	lastAnswer time.Time
	// failingSince is when the first failure after an answer was seen;
	// zero while the server answers.
	failingSince time.Time
	// answering is closed while the server answers and replaced by an
	// open channel when it stops.
	answering chan struct{}
}

// ContactOption changes an APIServerContact.
type ContactOption func(*APIServerContact)

// WithClock sets the clock (tests).
func WithClock(now func() time.Time) ContactOption {
	return func(c *APIServerContact) { c.now = now }
}

// WithProbePeriods sets how often the probe runs while the server answers
// and while it does not, and how long one probe may take.
func WithProbePeriods(every, retry, timeout time.Duration) ContactOption {
	return func(c *APIServerContact) { c.every, c.retry, c.timeout = every, retry, timeout }
}

// NewAPIServerContact tracks the API server that probe asks (see
// ReadyzProbe). It counts as answering from the start; Run starts probing.
func NewAPIServerContact(probe func(ctx context.Context) error, log *slog.Logger, opts ...ContactOption) *APIServerContact {
	c := &APIServerContact{probe: probe, now: time.Now, log: log,
		every: 2 * time.Second, retry: 250 * time.Millisecond, timeout: time.Second,
		kick: make(chan struct{}, 1), answering: make(chan struct{})}
	for _, o := range opts {
		o(c)
	}
	c.lastAnswer = c.now()
	close(c.answering)
	return c
}

// ReadyzProbe asks the API server's /readyz through a client of its own, so
// probing neither waits behind nor uses up the portal's other requests.
func ReadyzProbe(cfg *rest.Config) (func(ctx context.Context) error, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 20, 20
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("build API server probe: %w", err)
	}
	rc := cs.Discovery().RESTClient()
	return func(ctx context.Context) error {
		if err := rc.Get().AbsPath("/readyz").Do(ctx).Error(); err != nil {
			return fmt.Errorf("API server /readyz: %w", err)
		}
		return nil
	}, nil
}

// Staleness is how long the API server has not answered.
type Staleness struct {
	// LastAnswer is when the API server last answered this process.
	LastAnswer time.Time
	// For is how long ago that was.
	For time.Duration
}

// Stale reports whether the caches may be out of date: the API server has
// failed to answer since it last did. The Staleness says since when.
func (c *APIServerContact) Stale() (Staleness, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failingSince.IsZero() {
		return Staleness{}, false
	}
	return Staleness{LastAnswer: c.lastAnswer, For: c.now().Sub(c.lastAnswer)}, true
}

// Answered records an answer from the API server.
func (c *APIServerContact) Answered() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lastAnswer = c.now()
	if c.failingSince.IsZero() {
		return
	}
	if c.log != nil {
		c.log.Info("Kubernetes API server answers again", "after", c.lastAnswer.Sub(c.failingSince).Round(time.Millisecond))
	}
	c.failingSince = time.Time{}
	close(c.answering)
}

// Failed records a request the API server did not answer.
func (c *APIServerContact) Failed(err error) {
	c.mu.Lock()
	if c.failingSince.IsZero() {
		c.failingSince = c.now()
		c.answering = make(chan struct{})
		if c.log != nil {
			c.log.Warn("Kubernetes API server does not answer; pages show the cached cluster, marked as possibly stale", "err", err)
		}
	}
	c.mu.Unlock()
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// WaitAnswering returns once the API server answers, or with ctx's error.
func (c *APIServerContact) WaitAnswering(ctx context.Context) error {
	c.mu.Lock()
	ch := c.answering
	c.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("wait for the Kubernetes API server: %w", context.Cause(ctx))
	}
}

// Run probes the API server until ctx ends: every few seconds while it
// answers, a few times a second while it does not, and at once when a
// request failed.
func (c *APIServerContact) Run(ctx context.Context) {
	for {
		period := c.every
		if _, stale := c.Stale(); stale {
			period = c.retry
		}
		t := time.NewTimer(period)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-c.kick:
			t.Stop()
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, c.timeout)
		err := c.probe(pctx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			c.Failed(err)
		default:
			c.Answered()
		}
	}
}

// Transport wraps the transport of the informers' clients (rest.Config's
// Wrap): any HTTP answer counts as the server answering; a GET that gets
// no answer is held until the probe sees the server ready, then sent again.
// Other requests and errors pass through unchanged.
func (c *APIServerContact) Transport(next http.RoundTripper) http.RoundTripper {
	return &heldTransport{contact: c, next: next}
}

// InformerConfig is a copy of cfg whose requests go through Transport, for
// the clients that feed the informer caches only.
func (c *APIServerContact) InformerConfig(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(c.Transport)
	return cfg
}

type heldTransport struct {
	contact *APIServerContact
	next    http.RoundTripper
}

func (t *heldTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	retriable := req.Method == http.MethodGet && (req.Body == nil || req.Body == http.NoBody)
	for {
		if retriable {
			if err := t.contact.WaitAnswering(req.Context()); err != nil {
				return nil, err
			}
		}
		resp, err := t.next.RoundTrip(req)
		if err == nil {
			t.contact.Answered()
			return resp, nil
		}
		if req.Context().Err() != nil {
			return nil, err
		}
		t.contact.Failed(err)
		if !retriable {
			return nil, err
		}
	}
}
