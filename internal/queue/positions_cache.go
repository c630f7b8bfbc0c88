package queue

import (
	"context"
	"fmt"
	"sync"
	"time"

	visibility "sigs.k8s.io/kueue/apis/visibility/v1beta2"
)

// CachedPositions answers from a copy of each LocalQueue's pending list at
// most TTL old, so a job page viewed by many people at once costs one
// visibility API call per LocalQueue per TTL instead of one per view (the
// portal's API client is rate-limited, and waiting views would queue).
// Concurrent callers share one call in flight. Errors are not kept; while
// the visibility API fails, the last list read is answered with a
// *StalePositionsError saying when it was read.
//
// A copy past its TTL but younger than twice that is still answered at
// once, while one call in the background reads the next (stale-while-
// revalidate): on a busy machine that call takes a hundred milliseconds or
// more, and every view of the queue's jobs arriving meanwhile would wait
// for it. After a quiet spell longer than that, a view waits for a fresh
// list as on a miss.
type CachedPositions struct {
	Source Positions
	TTL    time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	mu      sync.Mutex
	entries map[string]*pendingList
	// lastGood is each LocalQueue's last list the source answered.
	lastGood map[string]*pendingList
	// refreshing marks the LocalQueues whose background read runs.
	refreshing map[string]bool
}

// refreshTimeout bounds a background read nobody waits for.
const refreshTimeout = 30 * time.Second

// StalePositionsError is returned with the last pending list read when
// the visibility API fails: the list is as it was at ReadAt. Err is the
// visibility API's error.
type StalePositionsError struct {
	ReadAt time.Time
	Err    error
}

func (e *StalePositionsError) Error() string {
	return fmt.Sprintf("pending positions as of %s: %v", e.ReadAt.Format(time.RFC3339), e.Err)
}

// Unwrap returns the visibility API's error.
func (e *StalePositionsError) Unwrap() error { return e.Err }

type pendingList struct {
	ready chan struct{}
	at    time.Time
	items []visibility.PendingWorkload
	err   error
}

// LocalQueuePending returns the LocalQueue's pending workloads in order.
// When the visibility API fails after an earlier answer, it returns that
// answer's list and a *StalePositionsError (test with errors.As).
func (c *CachedPositions) LocalQueuePending(ctx context.Context, namespace, localQueue string) ([]visibility.PendingWorkload, error) {
	key := namespace + "/" + localQueue
	now := c.now()
	c.mu.Lock()
	if c.entries == nil {
		c.entries = map[string]*pendingList{}
		c.lastGood = map[string]*pendingList{}
		c.refreshing = map[string]bool{}
	}
	e := c.entries[key]
	if e != nil && e.done() {
		switch age := now.Sub(e.at); {
		case age < c.TTL:
		case age < 2*c.TTL && e.err == nil:
			if !c.refreshing[key] {
				c.refreshing[key] = true
				go c.refresh(context.WithoutCancel(ctx), namespace, localQueue, key)
			}
		default:
			e = nil
		}
	}
	if e == nil {
		e = &pendingList{ready: make(chan struct{})}
		c.entries[key] = e
		c.mu.Unlock()
		items, err := c.Source.LocalQueuePending(ctx, namespace, localQueue)
		at := c.now()
		c.mu.Lock()
		if err == nil {
			e.items, e.at = items, at
			c.lastGood[key] = e
		} else {
			if c.entries[key] == e {
				delete(c.entries, key)
			}
			e.err = err
			if last := c.lastGood[key]; last != nil {
				e.items, e.err = last.items, &StalePositionsError{ReadAt: last.at, Err: err}
			}
		}
		c.mu.Unlock()
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

// refresh reads the LocalQueue's pending list in the background and keeps
// it; a failure keeps the copy there is until it is too old to answer,
// when a view's own read reports the failure.
func (c *CachedPositions) refresh(ctx context.Context, namespace, localQueue, key string) {
	ctx, cancel := context.WithTimeout(ctx, refreshTimeout)
	defer cancel()
	items, err := c.Source.LocalQueuePending(ctx, namespace, localQueue)
	at := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.refreshing, key)
	if err != nil {
		return
	}
	e := &pendingList{ready: make(chan struct{}), at: at, items: items}
	close(e.ready)
	if cur := c.entries[key]; cur == nil || cur.done() && !cur.at.After(at) {
		c.entries[key] = e
	}
	if last := c.lastGood[key]; last == nil || !last.at.After(at) {
		c.lastGood[key] = e
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
