package store

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A figure read from a table is vouched for until a transaction of anyone
// (here another connection) changes the table, a write of this process is
// under way or ends, or the listening connection is lost.
func TestChangesHearsCommittedChangesAndVouchesOnlyWhileListening(t *testing.T) {
	ctx := context.Background()
	s, dsn := newStoreAt(t)

	c := NewChanges(dsn, quietLog())
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { c.Run(runCtx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	var before ChangeMark
	require.Eventually(t, func() bool {
		var ok bool
		before, ok = c.Mark(TopicNotifications)
		return ok
	}, 10*time.Second, 10*time.Millisecond, "listening")
	quota, _ := c.Mark(TopicQuotaRequests)
	ledger, _ := c.Mark(TopicLedger)
	assert.True(t, c.Unchanged(TopicNotifications, before), "nothing changed yet")

	require.NoError(t, s.Notify(ctx, Notification{Username: "alice", Text: "bob approved your request", CreatedAt: time.Now()}))
	assert.Eventually(t, func() bool { return !c.Unchanged(TopicNotifications, before) }, 5*time.Second, 5*time.Millisecond,
		"a committed notification is heard")
	assert.True(t, c.Unchanged(TopicQuotaRequests, quota), "another table's figures stay")

	_, err := s.RecordRun(ctx, LedgerRow{RunKey: "uid-1", Team: "vision", Namespace: "team-vision", JobName: "train", Flavor: "h100",
		Resource: "nvidia.com/gpu", GPUs: 1, Outcome: "succeeded", AdmittedAt: time.Now().Add(-time.Hour), EndedAt: time.Now(), AllocatedGPUHours: 1})
	require.NoError(t, err)
	assert.Eventually(t, func() bool { return !c.Unchanged(TopicLedger, ledger) }, 5*time.Second, 5*time.Millisecond,
		"a new ledger row moves the ledger's version, which is heard")

	// This process's own write: nothing is vouched for while it runs, nor
	// anything read before it ended.
	quota, _ = c.Mark(TopicQuotaRequests)
	finished := c.Writing()
	_, ok := c.Mark(TopicQuotaRequests)
	assert.False(t, ok, "no figure is kept while a write is under way")
	assert.False(t, c.Unchanged(TopicQuotaRequests, quota))
	finished()
	assert.False(t, c.Unchanged(TopicQuotaRequests, quota), "a figure read before the write ended is read again")

	// The listening connection lost: figures read under it are not vouched
	// for, and the listener connects again.
	mark, ok := c.Mark(TopicPrices)
	require.True(t, ok)
	var killed int
	require.NoError(t, s.SQL().QueryRowContext(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND query LIKE 'LISTEN %'`).Scan(&killed))
	require.Equal(t, 1, killed, "the listening connection")
	assert.Eventually(t, func() bool { return !c.Unchanged(TopicPrices, mark) }, 5*time.Second, 5*time.Millisecond,
		"a figure read before the connection was lost is read again")
	assert.Eventually(t, func() bool { _, ok := c.Mark(TopicPrices); return ok }, 10*time.Second, 10*time.Millisecond, "listening again")
}

// A new launch record is announced by the replica that wrote it, after
// its commit, not by the insert's own transaction; announced notices
// reach every listener, in order, however many at once, and those whose
// sending failed (the announcing connection lost) are sent again.
func TestAnnouncedNoticesAreHeardInOrderAndSentAgainAfterALostConnection(t *testing.T) {
	ctx := context.Background()
	s, dsn := newStoreAt(t)

	var (
		mu    sync.Mutex
		heard []string
	)
	listener := NewChanges(dsn, quietLog())
	listener.Follow(LaunchNotices, func(rest string) { mu.Lock(); heard = append(heard, rest); mu.Unlock() })
	announcer := NewChanges(dsn, quietLog())
	for _, c := range []*Changes{listener, announcer} {
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { c.Run(runCtx); close(done) }()
		t.Cleanup(func() { cancel(); <-done })
		require.Eventually(t, func() bool { _, live := c.Listening(); return live }, 10*time.Second, 10*time.Millisecond, "listening")
	}
	heardSoFar := func() []string { mu.Lock(); defer mu.Unlock(); return slices.Clone(heard) }

	_, err := s.RecordLaunchAudited(ctx, Launch{LaunchID: "l-1", Team: "ml", Namespace: "team-ml", Name: "train-1", Kind: "training",
		Template: "pytorch-train", TemplateVersion: 1, Owner: "alice", Objects: StringList{"Job/train-1"}}, nil)
	require.NoError(t, err)
	announcer.Announce(LaunchNotices + "team-ml/marker")
	require.Eventually(t, func() bool { return len(heardSoFar()) > 0 }, 10*time.Second, 5*time.Millisecond, "the announced notice is heard")
	require.Equal(t, []string{"team-ml/marker"}, heardSoFar(), "the insert committed before it sent no notice of its own")

	var want []string
	for i := range 3*announceBatch + 7 {
		want = append(want, fmt.Sprintf("team-ml/train-%d", i))
		announcer.Announce(LaunchNotices + want[i])
	}
	want = append([]string{"team-ml/marker"}, want...)
	require.Eventually(t, func() bool { return len(heardSoFar()) >= len(want) }, 20*time.Second, 10*time.Millisecond,
		"every announced notice is heard")
	got := heardSoFar()
	require.Len(t, got, len(want), "each once")
	for i := range want {
		require.Equal(t, want[i], got[i], "in the order announced")
	}

	var killed int
	require.NoError(t, s.SQL().QueryRowContext(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND query LIKE 'SELECT pg_notify%'`).Scan(&killed))
	require.Equal(t, 1, killed, "the announcing connection")
	announcer.Announce(LaunchNotices + "team-ml/after")
	require.Eventually(t, func() bool { h := heardSoFar(); return h[len(h)-1] == "team-ml/after" }, 20*time.Second, 10*time.Millisecond,
		"a notice whose sending failed is sent again, on a new connection")
	assert.Len(t, heardSoFar(), len(want)+1, "once")
}
