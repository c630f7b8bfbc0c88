package store

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// Topics of the change notices the database's triggers send on
// changesChannel (migrations 00023 to 00026, 00028, 00030 and 00033), one per
// table (or pair of tables) a cached figure reads.
const (
	TopicNotifications   = "notifications"
	TopicQuotaRequests   = "quota_requests"
	TopicLedger          = "ledger"
	TopicPrices          = "prices"
	TopicIdlePolicies    = "idle_policies"
	TopicAcceptanceRules = "acceptance_rules"
	TopicIdleHolds       = "idle_holds"
	TopicWebhooks        = "webhooks"
	TopicVerdicts        = "verdicts"
	TopicSharedCosts     = "shared_costs"
	TopicEndpointUsage   = "endpoint_usage"
	TopicIdleEpisodes    = "idle_episodes"
	// TopicTokens is a change to an API token (but its last use) or to any user.
	TopicTokens         = "api_tokens"
	TopicTeams          = "teams"
	TopicTemplates      = "templates"
	TopicImageAllowlist = "image_allowlist"
	changesChannel      = "gantry_changes"
)

// SessionNotices starts the notices of migration 00027: one per session
// row written or deleted, followed by the hex SHA-256 of its token ("*"
// for every session).
const SessionNotices = "session:"

// LaunchNotices starts the notices of a launch record, followed by its
// namespace, "/" and its name ("*" for every record): a record marked
// deleted or removed is announced by its transaction (migrations 00029
// and 00034), a new one by the replica that wrote it, after its commit
// (Announce).
const LaunchNotices = "launch:"

// announceBatch bounds the notices Announce sends in one statement, and
// maxUnsent those it keeps while none can be sent (past it the oldest
// are dropped, and their readers learn of the change at their next full
// read).
const (
	announceBatch = 500
	maxUnsent     = 10_000
)

// announceRetry is the pause after a failed send of notices.
const announceRetry = time.Second

// Changes hears, over a connection of its own, which tables other
// transactions (of any replica) changed, so that a figure read from them
// can be kept until they change. It only vouches for a figure while it
// listens: a figure read while it does not, or before it last lost its
// connection (notices sent meanwhile are lost), is never kept.
//
// A notice comes a moment after its commit. So that whoever makes a change
// through this process sees it on their next view, that view's figures
// are read afresh: nothing is kept while a write of this process is under
// way (Writing), and nothing read before one ended.
type Changes struct {
	dsn string
	log *slog.Logger

	mu sync.Mutex
	// session counts connections: a figure read under an earlier one
	// may have missed a notice.
	session uint64
	live    bool
	topics  map[string]uint64
	// followers hear the notices that start with their prefix, which are
	// not counted as topics (one per row, they would pile up).
	followers map[string]func(string)
	// writing counts this process's writes under way; written counts
	// those that ended.
	writing int
	written uint64
	// unsent are the notices given to Announce and not sent yet; wake
	// tells the sender there are some.
	unsent []string
	wake   chan struct{}
	// announcer is the backend process of the connection this replica
	// announces over (0 while it has none): the notices it sent are not
	// heard back here, as whoever announces has applied its change
	// itself (KeptRecords forgets a record it wrote before announcing it).
	announcer atomic.Uint32
}

// ChangeMark is the state of one topic when a figure was read.
type ChangeMark struct {
	session, topic, written uint64
}

// NewChanges returns a Changes that listens once Run runs.
func NewChanges(dsn string, log *slog.Logger) *Changes {
	return &Changes{dsn: dsn, log: log, topics: map[string]uint64{}, followers: map[string]func(string){}, wake: make(chan struct{}, 1)}
}

// Follow has fn hear, with the prefix cut off, every notice that starts
// with prefix. It is to be called before Run. fn runs on the listening
// goroutine and must not block.
func (c *Changes) Follow(prefix string, fn func(rest string)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.followers[prefix] = fn
}

// Listening is the count of connections made so far and whether the last
// one still listens: whatever was heard of under an earlier count may
// have missed a notice.
func (c *Changes) Listening() (connection uint64, live bool) {
	if c == nil {
		return 0, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.session, c.live
}

// Mark is the state of topic now, to be taken before its figure is read;
// false if nothing listens (the figure must not be kept).
func (c *Changes) Mark(topic string) (ChangeMark, bool) {
	if c == nil {
		return ChangeMark{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return ChangeMark{session: c.session, topic: c.topics[topic], written: c.written}, c.live && c.writing == 0
}

// toldMark is Mark for the figures of NewToldKept: it ignores this
// process's writes, whose writers of the figures' tables call Told.
func (c *Changes) toldMark(topic string) (ChangeMark, bool) {
	if c == nil {
		return ChangeMark{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return ChangeMark{session: c.session, topic: c.topics[topic]}, c.live
}

// Told notes that this process committed a change to topic's tables: the
// figures kept from them are read again from now on, before the
// database's notice of the change arrives.
func (c *Changes) Told(topics ...string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range topics {
		c.topics[t]++
	}
}

// State names the changes to topics heard so far, under the connection
// that heard them; false if nothing listens. Unlike Mark it ignores this
// process's own writes: it is for figures whose writers through this
// process tell their readers themselves.
func (c *Changes) State(topics ...string) (string, bool) {
	if c == nil {
		return "", false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	b.WriteString(strconv.FormatUint(c.session, 10))
	for _, t := range topics {
		b.WriteByte('.')
		b.WriteString(strconv.FormatUint(c.topics[t], 10))
	}
	return b.String(), c.live
}

// Writing notes that this process is about to change the database; the
// returned func notes that it is done (committed or not).
func (c *Changes) Writing() (done func()) {
	if c == nil {
		return func() {}
	}
	c.mu.Lock()
	c.writing++
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		c.writing--
		c.written++
		c.mu.Unlock()
	}
}

// Unchanged reports whether topic has had no change since m was taken and
// the connection that would have heard of one has held since.
func (c *Changes) Unchanged(topic string, m ChangeMark) bool {
	now, live := c.Mark(topic)
	return live && now == m
}

// Announce has every replica (this one included) hear notice, sent a
// moment later on a connection of Changes' own, with the others given
// meanwhile, in a transaction of its own. A write announced so is not
// announced by its own transaction: PostgreSQL commits the transactions
// that send a notice one at a time (they take one lock of the whole
// database to queue it), so a notice sent by every launch would make
// launches wait on each other. Notices are sent only after their write
// committed, and until the process ends; those of a process that dies
// first are never sent.
func (c *Changes) Announce(notice string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.keepUnsentLocked(append(c.unsent, notice))
	c.mu.Unlock()
	c.poke()
}

// keepUnsentLocked keeps the newest maxUnsent of unsent to be sent.
func (c *Changes) keepUnsentLocked(unsent []string) {
	c.unsent = unsent[max(0, len(unsent)-maxUnsent):]
}

// poke wakes the sender of announced notices.
func (c *Changes) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// announce sends the announced notices until ctx ends, then those left
// (for a few seconds at most).
func (c *Changes) announce(ctx context.Context) {
	var conn *pgx.Conn
	defer func() {
		if conn != nil {
			c.announcer.Store(0)
			_ = conn.Close(context.WithoutCancel(ctx))
		}
	}()
	for {
		select {
		case <-c.wake:
		case <-ctx.Done():
			last, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			for c.pending() {
				if err := c.sendUnsent(last, &conn); err != nil {
					c.log.WarnContext(last, "announcing database changes before stopping", "err", err)
					return
				}
			}
			return
		}
		if err := c.sendUnsent(ctx, &conn); err != nil {
			if ctx.Err() == nil {
				c.log.WarnContext(ctx, "announcing database changes", "err", err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(announceRetry):
			}
		}
		if c.pending() {
			c.poke()
		}
	}
}

// pending reports whether announced notices wait to be sent.
func (c *Changes) pending() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.unsent) > 0
}

// sendUnsent sends up to announceBatch of the announced notices, oldest
// first, over *conn (connected first if nil; closed and set to nil when
// it fails, the notices kept to be sent again).
func (c *Changes) sendUnsent(ctx context.Context, conn **pgx.Conn) error {
	c.mu.Lock()
	batch := c.unsent[:min(len(c.unsent), announceBatch)]
	c.unsent = c.unsent[len(batch):]
	c.mu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	err := func() error {
		if *conn == nil {
			fresh, err := pgx.Connect(ctx, c.dsn)
			if err != nil {
				return fmt.Errorf("connect: %w", err)
			}
			*conn = fresh
			c.announcer.Store(fresh.PgConn().PID())
		}
		_, err := (*conn).Exec(ctx, `SELECT pg_notify($1, n) FROM unnest($2::text[]) AS n`, changesChannel, batch)
		if err != nil {
			return fmt.Errorf("send %d notices: %w", len(batch), err)
		}
		return nil
	}()
	if err != nil {
		if *conn != nil {
			c.announcer.Store(0)
			_ = (*conn).Close(context.WithoutCancel(ctx))
			*conn = nil
		}
		c.mu.Lock()
		c.keepUnsentLocked(slices.Concat(batch, c.unsent))
		c.mu.Unlock()
	}
	return err
}

// Run listens, and sends what is announced, until ctx ends, connecting
// again (after a pause) whenever a connection is lost.
func (c *Changes) Run(ctx context.Context) {
	sent := make(chan struct{})
	go func() { defer close(sent); c.announce(ctx) }()
	defer func() { <-sent }()
	for ctx.Err() == nil {
		err := c.listen(ctx)
		c.mu.Lock()
		c.live = false
		c.mu.Unlock()
		if ctx.Err() != nil {
			return
		}
		c.log.WarnContext(ctx, "listening for database changes", "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func (c *Changes) listen(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, c.dsn)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	if _, err := conn.Exec(ctx, "LISTEN "+changesChannel); err != nil {
		return fmt.Errorf("listen on %s: %w", changesChannel, err)
	}
	c.mu.Lock()
	c.session++
	c.live = true
	c.mu.Unlock()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return fmt.Errorf("wait for a change: %w", err)
		}
		if n.PID == c.announcer.Load() {
			continue
		}
		if fn, rest, ok := c.follower(n.Payload); ok {
			fn(rest)
			continue
		}
		c.mu.Lock()
		c.topics[n.Payload]++
		c.mu.Unlock()
	}
}

// follower is the follower of payload, and payload without its prefix.
func (c *Changes) follower(payload string) (fn func(string), rest string, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for prefix, fn := range c.followers {
		if rest, ok := strings.CutPrefix(payload, prefix); ok {
			return fn, rest, true
		}
	}
	return nil, "", false
}

// ReadWhileListening calls read whenever this replica listens and due
// says, under the connection it listens on, that what read keeps must be
// read (again), until ctx ends: every second at most, and retry after read
// failed (each failure told to failed).
func (c *Changes) ReadWhileListening(ctx context.Context, due func(connection uint64, now time.Time) bool, read func(context.Context) error,
	retry time.Duration, failed func(error)) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var failedAt time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		connection, live := c.Listening()
		now := time.Now()
		if !live || now.Sub(failedAt) < retry || !due(connection, now) {
			continue
		}
		if err := read(ctx); err != nil {
			failedAt = now
			failed(err)
		}
	}
}
