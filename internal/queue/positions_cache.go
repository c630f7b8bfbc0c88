package queue

import (
	"context"
	"sync"
	"time"

	visibility "sigs.k8s.io/kueue/apis/visibility/v1beta2"
)

// CachedPositions answers from a copy of each LocalQueue's pending list at
// most TTL old, so a job page viewed by many people at once costs one
// visibility API call per LocalQueue per TTL instead of one per view (the
// portal's API client is rate-limited, and waiting views would queue).
// Concurrent callers share one call in flight. Errors are not kept.
type CachedPositions struct {
	Source Positions
	TTL    time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	mu      sync.Mutex
	entries map[string]*pendingList
}

type pendingList struct {
	ready chan struct{}
	at    time.Time
	items []visibility.PendingWorkload
	err   error
}

// LocalQueuePending returns the LocalQueue's pending workloads in order.
func (c *CachedPositions) LocalQueuePending(ctx context.Context, namespace, localQueue string) ([]visibility.PendingWorkload, error) {
	key := namespace + "/" + localQueue
	now := c.now()
	c.mu.Lock()
	if c.entries == nil {
		c.entries = map[string]*pendingList{}
	}
	e := c.entries[key]
	if e != nil && e.done() && now.Sub(e.at) >= c.TTL {
		e = nil
	}
	if e == nil {
		e = &pendingList{ready: make(chan struct{})}
		c.entries[key] = e
		c.mu.Unlock()
		e.items, e.err = c.Source.LocalQueuePending(ctx, namespace, localQueue)
		e.at = c.now()
		if e.err != nil {
			c.mu.Lock()
			if c.entries[key] == e {
				delete(c.entries, key)
			}
			c.mu.Unlock()
		}
		close(e.ready)
		return e.items, e.err
	}
	c.mu.Unlock()
	select {
	case <-e.ready:
		return e.items, e.err
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

func (e *pendingList) done() bool {
	select {
	case <-e.ready:
		return true
	default:
		return false
	}
}

func (c *CachedPositions) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}
