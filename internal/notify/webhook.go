// Package notify delivers job endings to the team webhooks chat tools
// listen on. The endings and the deliveries are written by the attempt
// recorder (internal/queue) in one transaction; this package posts them.
package notify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/gantry-dev/gantry/internal/problem"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gantry-dev/gantry/internal/store"
)

// URLError says why a webhook URL was refused, in words for the person
// who typed it.
type URLError struct{ Reason string }

func (e *URLError) Error() string { return "webhook URL: " + e.Reason }

// Problem is Invalid: the URL was not saved.
func (e *URLError) Problem() problem.Problem {
	return problem.Problem{Kind: problem.Invalid, Title: "Check the webhook URL", Detail: "The webhook URL was not saved: " + e.Reason + "."}
}

// ValidateURL checks a team webhook URL: an absolute https URL (http only
// to this machine, for local receivers), with a host, no user or password
// in it, at most 2048 characters.
func ValidateURL(raw string) (*url.URL, error) {
	raw = strings.TrimSpace(raw)
	if len(raw) > 2048 {
		return nil, &URLError{Reason: "it is longer than 2048 characters"}
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" {
		return nil, &URLError{Reason: "it is not an absolute URL such as https://chat.example.com/hooks/123"}
	}
	if u.User != nil {
		return nil, &URLError{Reason: "put credentials in the path or query the chat tool gives you, not before the host"}
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !isLoopback(u.Hostname()) {
			return nil, &URLError{Reason: "use https (plain http is accepted only for a receiver on this machine)"}
		}
	default:
		return nil, &URLError{Reason: "use an https URL"}
	}
	if u.Fragment != "" {
		return nil, &URLError{Reason: "remove the #fragment: it is never sent"}
	}
	return u, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// DeliveryStore is the database side of webhook deliveries.
type DeliveryStore interface {
	DueWebhookDeliveries(ctx context.Context, now time.Time, limit int) ([]store.WebhookDelivery, error)
	ClaimWebhookDelivery(ctx context.Context, d store.WebhookDelivery, retryAt time.Time) (bool, error)
	WebhookDelivered(ctx context.Context, id int64, status int, at time.Time) error
	WebhookFailed(ctx context.Context, id int64, status *int, msg string, giveUp bool, at, retryAt time.Time) error
}

// MaxAttempts is how many times a delivery is tried before it is given up.
const MaxAttempts = 5

// Deliverer posts due deliveries. Each post runs on its own goroutine with
// a timeout, so a slow receiver delays only its own delivery; failures are
// recorded and retried with a growing wait, MaxAttempts times at most.
type Deliverer struct {
	Store  DeliveryStore
	Client *http.Client
	Log    *slog.Logger
	// Timeout bounds one post; 10s when zero.
	Timeout time.Duration
	// Backoff is the wait before the second attempt, doubled for each
	// further one; 10s when zero.
	Backoff time.Duration
	Now     func() time.Time
}

// Run delivers until ctx ends, looking for due deliveries every interval.
func (d *Deliverer) Run(ctx context.Context, interval time.Duration) {
	var wg sync.WaitGroup
	defer wg.Wait()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		d.Once(ctx, &wg)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Once starts a post for each due delivery it can claim.
func (d *Deliverer) Once(ctx context.Context, wg *sync.WaitGroup) {
	now := d.now()
	due, err := d.Store.DueWebhookDeliveries(ctx, now, 50)
	if err != nil {
		if ctx.Err() == nil {
			d.Log.WarnContext(ctx, "webhooks: list due deliveries", "err", err)
		}
		return
	}
	for _, del := range due {
		// The claim pushes the next attempt past everything this one does
		// before its outcome is recorded: the post and the record, each
		// bounded by the timeout. A post that never returns, or whose
		// outcome could not be recorded, is retried; a post whose success
		// is still being recorded (a slow database) is not posted again.
		ok, err := d.Store.ClaimWebhookDelivery(ctx, del, d.now().Add(2*d.timeout()+d.backoff(del.Attempts+1)))
		if err != nil || !ok {
			continue
		}
		del.Attempts++
		wg.Go(func() { d.post(ctx, del) })
	}
}

func (d *Deliverer) post(ctx context.Context, del store.WebhookDelivery) {
	ctx, cancel := context.WithTimeout(ctx, d.timeout())
	defer cancel()
	status, err := d.send(ctx, del)
	at := d.now()
	// A delivery cut short by the loop stopping is retried by the next
	// leader. Its record is bounded too: the claim's window counts on it.
	wctx, cancelRecord := context.WithTimeout(context.WithoutCancel(ctx), d.timeout())
	defer cancelRecord()
	if err == nil {
		if err := d.Store.WebhookDelivered(wctx, del.ID, status, at); err != nil {
			d.Log.WarnContext(ctx, "webhooks: record delivery", "id", del.ID, "err", err)
		}
		return
	}
	var st *int
	if status != 0 {
		st = &status
	}
	giveUp := del.Attempts >= MaxAttempts
	if err := d.Store.WebhookFailed(wctx, del.ID, st, err.Error(), giveUp, at, at.Add(d.backoff(del.Attempts))); err != nil {
		d.Log.WarnContext(ctx, "webhooks: record failed delivery", "id", del.ID, "err", err)
	}
	d.Log.InfoContext(ctx, "webhooks: delivery failed", "team", del.Team, "id", del.ID, "attempt", del.Attempts, "given_up", giveUp, "err", err)
}

func (d *Deliverer) send(ctx context.Context, del store.WebhookDelivery) (int, error) {
	if _, err := ValidateURL(del.URL); err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, del.URL, bytes.NewReader(del.Payload))
	if err != nil {
		return 0, fmt.Errorf("post to team %s webhook: %w", del.Team, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "gantry-webhook/1")
	client := d.Client
	if client == nil {
		client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	resp, err := client.Do(req)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err // the URL is the team's own; say what went wrong
		}
		return 0, fmt.Errorf("post: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, fmt.Errorf("the receiver answered %s", resp.Status)
	}
	return resp.StatusCode, nil
}

func (d *Deliverer) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}

func (d *Deliverer) timeout() time.Duration {
	if d.Timeout > 0 {
		return d.Timeout
	}
	return 10 * time.Second
}

// backoff is the wait after the nth attempt fails.
func (d *Deliverer) backoff(n int) time.Duration {
	b := d.Backoff
	if b <= 0 {
		b = 10 * time.Second
	}
	return b << min(max(n-1, 0), 10)
}
