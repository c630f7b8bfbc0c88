package notify

import (
	"context"
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

	"github.com/gantry-dev/gantry/internal/store"
)

// oneDelivery is a DeliveryStore of one delivery kept in memory, claimed
// as the database claims (store.ClaimWebhookDelivery), whose record of a
// success takes recordTakes (a busy database) unless its context ends.
type oneDelivery struct {
	mu          sync.Mutex
	d           store.WebhookDelivery
	recordTakes time.Duration
}

func (o *oneDelivery) DueWebhookDeliveries(_ context.Context, now time.Time, _ int) ([]store.WebhookDelivery, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.d.DeliveredAt != nil || o.d.FailedAt != nil || o.d.NextAttemptAt.After(now) {
		return nil, nil
	}
	return []store.WebhookDelivery{o.d}, nil
}

func (o *oneDelivery) ClaimWebhookDelivery(_ context.Context, d store.WebhookDelivery, retryAt time.Time) (bool, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.d.Attempts != d.Attempts || o.d.DeliveredAt != nil || o.d.FailedAt != nil {
		return false, nil
	}
	o.d.Attempts++
	o.d.NextAttemptAt = retryAt
	return true, nil
}

func (o *oneDelivery) WebhookDelivered(ctx context.Context, _ int64, status int, at time.Time) error {
	select {
	case <-time.After(o.recordTakes):
	case <-ctx.Done():
		return ctx.Err()
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.d.DeliveredAt, o.d.LastStatus = &at, &status
	return nil
}

func (o *oneDelivery) WebhookFailed(_ context.Context, _ int64, status *int, msg string, giveUp bool, at, retryAt time.Time) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.d.LastError, o.d.LastStatus, o.d.NextAttemptAt = msg, status, retryAt
	if giveUp {
		o.d.FailedAt = &at
	}
	return nil
}

// A receiver that takes its time and a database slow to record the
// success, each within the post's timeout: the delivery is posted once,
// not again while its success is still being written down.
func TestASlowlyRecordedDeliveryIsNotPostedTwice(t *testing.T) {
	const timeout = time.Second
	var posts atomic.Int32
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		posts.Add(1)
		time.Sleep(timeout * 6 / 10)
	}))
	defer receiver.Close()
	db := &oneDelivery{d: store.WebhookDelivery{ID: 1, Team: "ml", URL: receiver.URL + "/hook", Payload: []byte(`{}`)},
		recordTakes: timeout * 6 / 10}
	d := &Deliverer{Store: db, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Timeout: timeout, Backoff: 10 * time.Millisecond}
	ctx, stop := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { d.Run(ctx, 10*time.Millisecond); close(done) }()
	require.Eventually(t, func() bool {
		db.mu.Lock()
		defer db.mu.Unlock()
		return db.d.DeliveredAt != nil
	}, 10*time.Second, 10*time.Millisecond, "the delivery is recorded")
	// Past the whole window of a claim: a second post would have come.
	time.Sleep(timeout)
	stop()
	<-done
	assert.Equal(t, int32(1), posts.Load(), "posted once")
	assert.Equal(t, 1, db.d.Attempts)
}
