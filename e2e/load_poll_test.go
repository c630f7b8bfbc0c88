package e2e

import (
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// loadPollEvery is how often an open job page asks for its status
// fragment: status-refresh.js's default, counted from the last answer.
const loadPollEvery = 3 * time.Second

// polls are the status refreshes of the job pages users keep open.
type polls struct {
	mu      sync.Mutex
	lat     []time.Duration
	timings []viewTiming
	failed  int
}

// pollOpenJobs has every user keep one job page open, as a tab left on a
// job does, while a page is measured: the page's refresh script asks for
// path(user) (the job's status fragment) every, counted from its last
// answer, the first time within one period of the start (the tabs were
// opened at different moments). stop ends the polling and returns what
// each poll waited, its Server-Timing and how many did not answer 200; a
// poll cut short by stop is not counted.
func pollOpenJobs(ctx context.Context, clients []*http.Client, base string, path func(user int) string, every time.Duration) (stop func() ([]time.Duration, []viewTiming, int)) {
	ctx, cancel := context.WithCancel(ctx)
	var (
		wg sync.WaitGroup
		p  polls
	)
	for user, client := range clients {
		status := base + path(user)
		wg.Go(func() {
			if !pause(ctx, rand.N(every)) {
				return
			}
			for {
				p.poll(ctx, client, status)
				if !pause(ctx, every) {
					return
				}
			}
		})
	}
	return func() ([]time.Duration, []viewTiming, int) {
		cancel()
		wg.Wait()
		return p.lat, p.timings, p.failed
	}
}

func (p *polls) poll(ctx context.Context, client *http.Client, u string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		p.fail()
		return
	}
	req.Header.Set("Accept", "text/html") // as status-refresh.js asks
	t0 := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			p.fail()
		}
		return
	}
	_, err = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	took := time.Since(t0)
	if ctx.Err() != nil && err != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil || resp.StatusCode != http.StatusOK {
		p.failed++
		return
	}
	p.lat = append(p.lat, took)
	p.timings = append(p.timings, viewTiming{at: t0, header: resp.Header.Get("Server-Timing"),
		trailer: resp.Trailer.Get("Server-Timing"), path: req.URL.Path})
}

func (p *polls) fail() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failed++
}

func TestOpenJobPagesPollTheirStatusEveryPeriodFromTheLastAnswer(t *testing.T) {
	var (
		mu    sync.Mutex
		asked = map[string][]time.Time{}
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked[r.URL.Path] = append(asked[r.URL.Path], time.Now())
		mu.Unlock()
		if r.Header.Get("Accept") != "text/html" || strings.Contains(r.URL.Path, "gone") {
			http.Error(w, "no such job", http.StatusNotFound)
			return
		}
		time.Sleep(10 * time.Millisecond)
		w.Header().Set("Server-Timing", "db;dur=1")
		_, _ = io.WriteString(w, `<div id="job-status">Running</div>`)
	}))
	defer srv.Close()
	paths := []string{"/teams/a/jobs/one/status", "/teams/b/jobs/two/status", "/teams/a/jobs/gone/status"}
	clients := []*http.Client{srv.Client(), srv.Client(), srv.Client()}
	every := 50 * time.Millisecond
	stop := pollOpenJobs(t.Context(), clients, srv.URL, func(u int) string { return paths[u] }, every)
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(asked[paths[0]]) >= 4 && len(asked[paths[1]]) >= 4 && len(asked[paths[2]]) >= 2
	}, 30*time.Second, 10*time.Millisecond)
	lat, timings, failed := stop()

	mu.Lock()
	defer mu.Unlock()
	// Every answered poll is counted once; one per page may have been cut
	// short by stop, and is not counted.
	answered := len(asked[paths[0]]) + len(asked[paths[1]])
	assert.LessOrEqual(t, len(lat), answered)
	assert.GreaterOrEqual(t, len(lat), answered-2)
	assert.Len(t, timings, len(lat))
	assert.LessOrEqual(t, failed, len(asked[paths[2]]), "a job page whose status is not found counts as failed")
	assert.GreaterOrEqual(t, failed, len(asked[paths[2]])-1, "a job page whose status is not found counts as failed")
	for _, d := range lat {
		assert.GreaterOrEqual(t, d, 10*time.Millisecond, "a poll waits for its whole answer")
	}
	for _, tm := range timings {
		assert.Equal(t, "db;dur=1", tm.header)
		assert.Contains(t, paths[:2], tm.path)
	}
	// A page asks again a whole period after its last answer, never sooner.
	for _, p := range paths[:2] {
		at := asked[p]
		for i := 1; i < len(at); i++ {
			assert.GreaterOrEqual(t, at[i].Sub(at[i-1]), every+10*time.Millisecond, "%s: poll %d came %s after the one before", p, i, at[i].Sub(at[i-1]))
		}
	}
	n := len(asked[paths[0]])
	mu.Unlock()
	time.Sleep(3 * every)
	mu.Lock()
	assert.Equal(t, n, len(asked[paths[0]]), "no poll after stop")
}
