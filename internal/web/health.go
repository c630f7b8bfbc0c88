package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/gin-gonic/gin"
	"k8s.io/client-go/discovery"

	"github.com/gantry-dev/gantry/internal/problem"
)

// healthz says the process is alive; it checks nothing else.
func (h *handler) healthz(c *gin.Context) {
	c.String(http.StatusOK, "ok\n")
}

// readyz checks every dependency in parallel, each with a short timeout,
// and names the ones that failed.
func (h *handler) readyz(c *gin.Context) {
	results := make([]string, len(h.Ready))
	failed := make([]bool, len(h.Ready))
	var wg sync.WaitGroup
	for i, check := range h.Ready {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(c.Request.Context(), h.ReadyTimeout)
			defer cancel()
			if err := check.Check(ctx); err != nil {
				failed[i] = true
				// The body is public: it names the dependency, the log keeps the error.
				results[i] = check.Name + ": failed"
				switch {
				case errors.Is(err, context.DeadlineExceeded):
					results[i] += " (no answer within " + h.ReadyTimeout.String() + ")"
				case problem.Describe(err).Kind == problem.Unavailable:
					results[i] += " (not answering)"
				}
				h.Log.WarnContext(ctx, "readiness check failed", "check", check.Name, "err", err)
				return
			}
			results[i] = check.Name + ": ok"
		}()
	}
	wg.Wait()
	status := http.StatusOK
	for _, f := range failed {
		if f {
			status = http.StatusServiceUnavailable
		}
	}
	c.Header("Cache-Control", "no-store")
	c.String(status, strings.Join(results, "\n")+"\n")
}

// APIServerCheck checks the Kubernetes API server's own /readyz.
func APIServerCheck(d discovery.DiscoveryInterface) ReadinessCheck {
	return ReadinessCheck{Name: "kubernetes", Check: func(ctx context.Context) error {
		if err := d.RESTClient().Get().AbsPath("/readyz").Do(ctx).Error(); err != nil {
			return fmt.Errorf("API server /readyz: %w", err)
		}
		return nil
	}}
}
