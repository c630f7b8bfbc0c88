package web

import (
	"context"
	"time"

	"github.com/gantry-dev/gantry/internal/servertiming"
)

// A running job's chart and measured hours are answered at once while the
// run's last figures are under maxFamilyAge old (getOrLast); a run nobody
// looked at for longer made its next view wait for Prometheus, up to the
// page's whole wait. In the load runs each running job is viewed every 20 s
// or so, and the views that came after a minute without one were the job
// page's slowest (its p99 at 1,000 workloads, 15.4 ms, 14.9 of them spent
// waiting for Prometheus).
//
// So figures of now that a view asked for within refreshWindow are read
// again in the background once their last ones are refreshAfter old:
// early enough for the read to end before they are too old to answer. The
// reads are started by views (of any run) as the sweeps are, at most
// maxRefreshes each refreshEvery, and at most one per run each
// refreshAfter, so the extra reads are bounded by the runs people look at,
// and a portal nobody views reads nothing.
const (
	refreshAfter  = 40 * time.Second
	refreshWindow = 2 * time.Minute
	refreshEvery  = time.Second
	maxRefreshes  = 8
)

// askedFamily is what a view last asked of a family's figures of now: the
// key, the end of the range it asked for and when, and the read.
type askedFamily[V any] struct {
	key   string
	ttl   time.Duration
	end   time.Time
	asked time.Time
	// tried is when the figures were last read again in the background.
	tried time.Time
	load  func(ctx context.Context, end time.Time) (V, error)
}

// refreshTimes are refreshAfter, refreshWindow and refreshEvery, shorter
// in tests.
type refreshTimes struct {
	after, window, every time.Duration
}

func (r refreshTimes) orDefault() refreshTimes {
	if r.after == 0 {
		r.after = refreshAfter
	}
	if r.window == 0 {
		r.window = refreshWindow
	}
	if r.every == 0 {
		r.every = refreshEvery
	}
	return r
}

// getRecent is getOrLast for figures of now (a range ending at end, the
// present): it also notes the view's ask, so that views read the family's
// figures again before they are too old to answer at once, and starts the
// background reads that are due (refreshDue).
func (s *sharedFigures[V]) getRecent(ctx context.Context, family, key string, ttl time.Duration, end time.Time, load func(ctx context.Context, end time.Time) (V, error)) (V, error) {
	now := time.Now()
	s.mu.Lock()
	if s.asked == nil || len(s.asked) >= maxCachedFigures {
		s.asked = map[string]askedFamily[V]{}
	}
	a := s.asked[family]
	s.asked[family] = askedFamily[V]{key: key, ttl: ttl, end: end, asked: now, tried: a.tried, load: load}
	s.mu.Unlock()
	s.refreshDue(ctx, family)
	return s.getOrLast(ctx, family, key, ttl, func(ctx context.Context) (V, error) { return load(ctx, end) })
}

// refreshDue starts, at most once each refreshEvery, the background reads
// of the families asked for within the refresh window whose last figures
// are older than refreshAfter and that no read is loading; each reads the
// range the view asked for moved on by the time since. The family the view
// asks for itself (viewing) is left to the view, whose read it waits for
// or not (getOrLast), and so is a family with no figures left to answer
// (never read, or its reads failed): its next view reads it.
func (s *sharedFigures[V]) refreshDue(ctx context.Context, viewing string) {
	now := time.Now()
	rt := s.refresh.orDefault()
	type due struct {
		family string
		a      askedFamily[V]
	}
	var start []due
	s.mu.Lock()
	if now.Sub(s.refreshed) < rt.every {
		s.mu.Unlock()
		return
	}
	s.refreshed = now
	for f, a := range s.asked {
		if now.Sub(a.asked) >= rt.window {
			delete(s.asked, f)
			continue
		}
		last, ok := s.latest[f]
		if f == viewing || !ok || s.loading[f] > 0 || now.Sub(a.tried) < rt.after || now.Sub(last.loadedAt) < rt.after {
			continue
		}
		a.tried = now
		s.asked[f] = a
		start = append(start, due{f, a})
		if len(start) == maxRefreshes {
			break
		}
	}
	s.mu.Unlock()
	// Other runs' reads are no part of the view that starts them.
	ctx = servertiming.Detach(ctx)
	for _, d := range start {
		end := d.a.end.Add(now.Sub(d.a.asked))
		s.group.DoChan(d.a.key, s.reloader(ctx, d.family, d.a.key, d.a.ttl, func(ctx context.Context) (V, error) {
			return d.a.load(ctx, end)
		}))
	}
}
