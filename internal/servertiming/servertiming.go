// Package servertiming measures how long one request waited on each of the
// portal's dependencies (PostgreSQL, Prometheus, the Kubernetes API server)
// and names it in a Server-Timing header (W3C Server Timing), which a
// browser's developer tools show beside the request and the load run reads
// to say where its slowest views spent their time.
package servertiming

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// Dependency is what a request waited on.
type Dependency int

// The dependencies, in the order the header names them.
const (
	DB Dependency = iota
	Prometheus
	Kube
	dependencies
)

var names = [dependencies]string{"db", "prom", "kube"}

// Timing is one request's waits; it is safe for concurrent use (a page's
// loads may run in goroutines of their own).
type Timing struct {
	start time.Time
	took  [dependencies]atomic.Int64 // nanoseconds
	calls [dependencies]atomic.Int64
}

type key struct{}

// Start returns ctx carrying a new Timing, started now.
func Start(ctx context.Context) (context.Context, *Timing) {
	t := &Timing{start: time.Now()}
	return context.WithValue(ctx, key{}, t), t
}

// Add counts one call to dep that took d, on the request of ctx (if any).
func Add(ctx context.Context, dep Dependency, d time.Duration) {
	if t, ok := ctx.Value(key{}).(*Timing); ok && t != nil {
		t.took[dep].Add(int64(d))
		t.calls[dep].Add(1)
	}
}

// Detach is ctx without its cancellation and without its request's
// Timing, for work a request leaves behind once it has answered.
func Detach(ctx context.Context) context.Context {
	return context.WithValue(context.WithoutCancel(ctx), key{}, (*Timing)(nil))
}

// Header is the Server-Timing value so far: each dependency waited on,
// with its calls in the description and their durations summed (calls a
// page makes at once overlap, so the sum may exceed "total"), and the time
// since Start as "total".
func (t *Timing) Header() string {
	var b strings.Builder
	for dep := range dependencies {
		if n := t.calls[dep].Load(); n > 0 {
			fmt.Fprintf(&b, "%s;desc=\"%d\";dur=%.2f, ", names[dep], n, float64(t.took[dep].Load())/1e6)
		}
	}
	fmt.Fprintf(&b, "total;dur=%.2f", float64(time.Since(t.start))/1e6)
	return b.String()
}

// Whole is the Server-Timing trailer of a finished view: its whole time in
// the portal, its body written out included ("view").
func (t *Timing) Whole() string {
	return fmt.Sprintf("view;dur=%.2f", float64(time.Since(t.start))/1e6)
}

// Parse reads a Server-Timing value written by Header: milliseconds and
// calls by name ("db", "prom", "kube", "total").
func Parse(v string) (ms map[string]float64, calls map[string]int) {
	ms, calls = map[string]float64{}, map[string]int{}
	for _, metric := range strings.Split(v, ",") {
		parts := strings.Split(strings.TrimSpace(metric), ";")
		name := parts[0]
		for _, p := range parts[1:] {
			k, val, _ := strings.Cut(p, "=")
			switch k {
			case "dur":
				var f float64
				if _, err := fmt.Sscan(val, &f); err == nil {
					ms[name] = f
				}
			case "desc":
				var n int
				if _, err := fmt.Sscan(strings.Trim(val, `"`), &n); err == nil {
					calls[name] = n
				}
			}
		}
	}
	return ms, calls
}

// Transport counts each round trip of next as a wait on dep, for the
// request whose context the outgoing request carries.
func Transport(dep Dependency, next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return roundTripper{dep: dep, next: next}
}

type roundTripper struct {
	dep  Dependency
	next http.RoundTripper
}

func (r roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	t0 := time.Now()
	resp, err := r.next.RoundTrip(req)
	Add(req.Context(), r.dep, time.Since(t0))
	return resp, err
}
