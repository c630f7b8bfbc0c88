package notify

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gantry-dev/gantry/internal/devcluster/stacktest"
	"github.com/gantry-dev/gantry/internal/queue"
	"github.com/gantry-dev/gantry/internal/store"
)

func TestValidateURL(t *testing.T) {
	cases := map[string]string{
		"https://chat.example.com/hooks/T1/B2/xyz": "",
		"http://127.0.0.1:8080/hook":               "",
		"http://localhost/hook":                    "",
		"http://chat.example.com/hook":             "use https (plain http is accepted only for a receiver on this machine)",
		"ftp://chat.example.com/hook":              "use an https URL",
		"/hooks/1":                                 "it is not an absolute URL such as https://chat.example.com/hooks/123",
		"https://user:pw@chat.example.com/hook":    "put credentials in the path or query the chat tool gives you, not before the host",
		"https://chat.example.com/hook#x":          "remove the #fragment: it is never sent",
	}
	for raw, want := range cases {
		t.Run(raw, func(t *testing.T) {
			_, err := ValidateURL(raw)
			if want == "" {
				assert.NoError(t, err)
				return
			}
			var ue *URLError
			require.ErrorAs(t, err, &ue)
			assert.Equal(t, want, ue.Reason)
		})
	}
}

func newStore(t *testing.T) *store.Store {
	t.Helper()
	ctx := context.Background()
	s, err := store.Open(ctx, stacktest.Postgres(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	require.NoError(t, store.Migrate(ctx, s.SQL(), slog.New(slog.NewTextHandler(io.Discard, nil))))
	return s
}

// A job ending seen by two recorders at once (a restarted leader and the
// new one) notifies its owner once and posts to the team's webhook once;
// a receiver that fails is retried, and one that keeps failing is given up
// after MaxAttempts with its error recorded.
func TestEndingNotifiesOnceAndWebhookRetries(t *testing.T) {
	ctx := context.Background()
	db := newStore(t)
	_, err := db.RecordLaunch(ctx, store.Launch{LaunchID: "l1", Team: "ml", Namespace: "team-ml", Name: "train", Kind: "training",
		Template: "pytorch", TemplateVersion: 1, Owner: "alice", Parameters: json.RawMessage(`{}`)})
	require.NoError(t, err)

	var calls atomic.Int32
	var mu sync.Mutex
	var got []queue.WebhookMessage
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		assert.Equal(t, "application/json", r.Header.Get("Content-Type"))
		var m queue.WebhookMessage
		assert.NoError(t, json.NewDecoder(r.Body).Decode(&m))
		mu.Lock()
		got = append(got, m)
		mu.Unlock()
	}))
	defer receiver.Close()
	_, err = ValidateURL(receiver.URL)
	require.NoError(t, err, "a receiver on loopback is accepted")
	require.NoError(t, db.SetTeamWebhook(ctx, store.TeamWebhook{Team: "ml", URL: receiver.URL + "/hook", UpdatedBy: "lead"}))

	rec := &queue.AttemptRecorder{Store: db}
	m := store.JobMoment{Team: "ml", Namespace: "team-ml", Job: "train", MomentKey: "wl-finish/u1", Kind: store.MomentEnded,
		At: time.Now().UTC().Truncate(time.Second), Ending: string(queue.EndingFailed), Cause: string(queue.CauseExitCode),
		Words: "Container main of pod train-0-x exited with code 3."}
	var wg sync.WaitGroup
	inserted := make([]bool, 2)
	for i := range inserted {
		wg.Go(func() {
			ok, err := db.RecordJobMoment(ctx, m, rec.Notice(m))
			assert.NoError(t, err)
			inserted[i] = ok
		})
	}
	wg.Wait()
	assert.ElementsMatch(t, []bool{true, false}, inserted, "one of two racing recorders writes the moment")
	notes, err := db.Notifications(ctx, "alice", 10)
	require.NoError(t, err)
	require.Len(t, notes, 1, "the owner is told once")
	assert.Equal(t, "Job train failed: Container main of pod train-0-x exited with code 3.", notes[0].Text)
	assert.Equal(t, "/teams/ml/jobs/train", notes[0].Link)

	d := &Deliverer{Store: db, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Backoff: 50 * time.Millisecond, Timeout: 2 * time.Second}
	loopCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { d.Run(loopCtx, 20*time.Millisecond); close(done) }()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		ds, err := db.TeamWebhookDeliveries(ctx, "ml", 10)
		require.NoError(c, err)
		require.Len(c, ds, 1, "one delivery for one ending")
		assert.NotNil(c, ds[0].DeliveredAt)
		assert.Equal(c, 2, ds[0].Attempts, "the first post failed (503) and was retried")
	}, 30*time.Second, 50*time.Millisecond)
	stop()
	<-done
	mu.Lock()
	require.Len(t, got, 1)
	assert.Equal(t, queue.WebhookMessage{Text: "Job train failed: Container main of pod train-0-x exited with code 3. /teams/ml/jobs/train",
		Job: "train", Team: "ml", Ending: queue.EndingFailed, Cause: m.Words, Link: "/teams/ml/jobs/train", At: m.At}, got[0])
	mu.Unlock()

	// A receiver that is down: every attempt fails, the last one gives up.
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "gone", http.StatusGone)
	}))
	defer down.Close()
	require.NoError(t, db.SetTeamWebhook(ctx, store.TeamWebhook{Team: "ml", URL: down.URL, UpdatedBy: "lead"}))
	m2 := m
	m2.MomentKey, m2.Ending, m2.Words = "wl-evict/u1/1", string(queue.EndingPreempted), "It was preempted to make room for serve of team ops."
	ok, err := db.RecordJobMoment(ctx, m2, rec.Notice(m2))
	require.NoError(t, err)
	require.True(t, ok)
	loopCtx, stop = context.WithCancel(ctx)
	defer stop()
	go d.Run(loopCtx, 20*time.Millisecond)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		ds, err := db.TeamWebhookDeliveries(ctx, "ml", 10)
		require.NoError(c, err)
		require.Len(c, ds, 2)
		assert.NotNil(c, ds[0].FailedAt, "given up")
		assert.Equal(c, MaxAttempts, ds[0].Attempts)
		assert.Equal(c, "the receiver answered 410 Gone", ds[0].LastError)
		assert.Nil(c, ds[0].DeliveredAt)
	}, time.Minute, 50*time.Millisecond)
}
