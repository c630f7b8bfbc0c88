package kube

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeClock is a settable clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (f *fakeClock) now() time.Time { f.mu.Lock(); defer f.mu.Unlock(); return f.t }
func (f *fakeClock) add(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.t = f.t.Add(d)
}

func TestAPIServerContactSaysSinceWhenTheCachesMayBeStale(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 12, 1, 22, 50, 0, 0, time.UTC)}
	c := NewAPIServerContact(func(context.Context) error { return nil }, nil, WithClock(clock.now))
	_, stale := c.Stale()
	assert.False(t, stale, "a new contact counts as answering")

	clock.add(7 * time.Second)
	c.Answered()
	answered := clock.now()
	clock.add(3 * time.Second)
	c.Failed(errors.New("connection refused"))
	clock.add(37 * time.Second)
	c.Failed(errors.New("connection refused"))
	s, stale := c.Stale()
	require.True(t, stale)
	assert.Equal(t, Staleness{LastAnswer: answered, For: 40 * time.Second}, s, "since the last answer, not the first failure")

	c.Answered()
	_, stale = c.Stale()
	assert.False(t, stale, "one answer ends it")
}

func TestAPIServerContactProbesFastWhileTheServerDoesNotAnswer(t *testing.T) {
	var down atomic.Bool
	var probes atomic.Int64
	probe := func(context.Context) error {
		probes.Add(1)
		if down.Load() {
			return errors.New("connection refused")
		}
		return nil
	}
	c := NewAPIServerContact(probe, nil, WithProbePeriods(time.Hour, 10*time.Millisecond, time.Second))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go c.Run(ctx)

	down.Store(true)
	c.Failed(errors.New("watch ended"))
	require.Eventually(t, func() bool { return probes.Load() >= 3 }, 5*time.Second, 5*time.Millisecond,
		"probes every retry period while failing, though the answering period is an hour")
	_, stale := c.Stale()
	assert.True(t, stale)

	down.Store(false)
	require.Eventually(t, func() bool { _, s := c.Stale(); return !s }, 5*time.Second, 5*time.Millisecond,
		"the first probe that answers ends the staleness")
	n := probes.Load()
	time.Sleep(100 * time.Millisecond)
	assert.LessOrEqual(t, probes.Load(), n+1, "back to the slow period once answering")
}

// TestAPIServerContactTransportHoldsGETsUntilTheServerAnswers: an informer's
// GET that finds the server gone waits for the probe and then succeeds, so
// the reflector sees no error (and does not back off); a POST fails at once.
func TestAPIServerContactTransportHoldsGETsUntilTheServerAnswers(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close()) // nothing listens: connection refused

	var up atomic.Bool
	c := NewAPIServerContact(func(context.Context) error {
		if !up.Load() {
			return errors.New("connection refused")
		}
		return nil
	}, nil, WithProbePeriods(time.Hour, 10*time.Millisecond, time.Second))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go c.Run(ctx)
	client := &http.Client{Transport: c.Transport(&http.Transport{})}

	post, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/apis/batch/v1/namespaces/x/jobs", http.NoBody)
	require.NoError(t, err)
	_, err = client.Do(post)
	require.Error(t, err, "a write is not held or repeated")
	_, stale := c.Stale()
	require.True(t, stale, "the failure marks the caches possibly stale")

	got := make(chan int, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/api/v1/pods?watch=true", nil)
		resp, err := client.Do(req)
		if err != nil {
			got <- -1
			return
		}
		resp.Body.Close()
		got <- resp.StatusCode
	}()
	select {
	case s := <-got:
		t.Fatalf("the GET returned %d while the server was down", s)
	case <-time.After(200 * time.Millisecond):
	}

	srv := &httptest.Server{Listener: mustListen(t, addr), Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
	})}}
	srv.Start()
	defer srv.Close()
	up.Store(true)
	select {
	case s := <-got:
		assert.Equal(t, http.StatusOK, s, "the held GET is sent again once the probe sees the server")
	case <-time.After(5 * time.Second):
		t.Fatal("the held GET never went through")
	}
	_, stale = c.Stale()
	assert.False(t, stale)

	// A GET whose context ends while held returns with that error.
	cancelled, stop := context.WithCancel(t.Context())
	c.Failed(errors.New("gone again"))
	stop()
	req, err := http.NewRequestWithContext(cancelled, http.MethodGet, srv.URL, nil)
	require.NoError(t, err)
	_, err = client.Do(req)
	assert.ErrorIs(t, err, context.Canceled)
}

func mustListen(t *testing.T, addr string) net.Listener {
	t.Helper()
	var l net.Listener
	var err error
	require.Eventually(t, func() bool {
		l, err = net.Listen("tcp", addr)
		return err == nil
	}, 5*time.Second, 10*time.Millisecond, "listen on %s: %v", addr, err)
	return l
}
