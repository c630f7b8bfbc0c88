package web

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gantry-dev/gantry/internal/devcluster/storetest"
	"github.com/gantry-dev/gantry/internal/store"
)

// A user's unread count is read once and kept while nothing changes; a
// notification committed by anyone (another replica, the leader's loops)
// is counted on the next view, and so is a change the user makes through
// this replica, without waiting for the database's notice.
func TestKeptBadgeCountsFollowEveryChange(t *testing.T) {
	ctx := context.Background()
	db, changes, stopListening := storetest.Listening(t)

	badges := store.NewKept[navBadgeCounts](changes, store.TopicNotifications, store.TopicQuotaRequests)
	var reads atomic.Int64
	unread := func() int {
		n, err := badges.Get(ctx, "alice", func(ctx context.Context) (navBadgeCounts, error) {
			reads.Add(1)
			n, err := db.UnreadNotifications(ctx, "alice")
			return navBadgeCounts{unread: n}, err
		})
		require.NoError(t, err)
		return n.unread
	}

	for range 10 {
		assert.Equal(t, 0, unread())
	}
	assert.Equal(t, int64(1), reads.Load(), "ten views, one read")

	// Another replica's (or the leader's) change reaches this one.
	require.NoError(t, db.Notify(ctx, store.Notification{Username: "alice", Text: "bob approved your request", CreatedAt: time.Now()}))
	assert.Eventually(t, func() bool { return unread() == 1 }, 5*time.Second, 5*time.Millisecond, "the new notification is counted")
	reads.Store(0)
	assert.Equal(t, 1, unread())
	assert.Zero(t, reads.Load(), "kept again once read")

	// Alice reads her notifications through this replica: her next view
	// counts none, whether or not the notice has come yet.
	done := changes.Writing()
	require.NoError(t, db.MarkNotificationsRead(ctx, "alice", time.Now()))
	done()
	assert.Equal(t, 0, unread(), "the view right after her own change")

	// Without a listening connection nothing is kept.
	stopListening()
	reads.Store(0)
	unread()
	unread()
	assert.Equal(t, int64(2), reads.Load(), "every view reads while nobody listens")
}

// A team's cost per accepted unit is computed once and kept while nothing
// under it changes, instead of every few seconds:
// a verdict, a shared cost or an endpoint's usage written by another
// replica (or the leader's loops) is counted on the next view once its
// notice is heard; without the notices it is kept only briefly.
func TestTeamAccountingIsKeptUntilATableUnderItChanges(t *testing.T) {
	ctx := context.Background()
	db, changes, stopListening := storetest.Listening(t)
	acc := &countingAccounting{}
	shared := newSharedAccounting(acc, newKeptCosts(db, changes).LedgerVersion, changes)
	month := time.Now()
	view := func() {
		t.Helper()
		_, err := shared.Team(ctx, "ml", month, 3)
		require.NoError(t, err)
	}
	reads := func() int64 { return acc.teams.Load() }

	for range 20 {
		view()
	}
	assert.Equal(t, int64(1), reads(), "twenty views, one computation")
	_, ttl := shared.heardState()
	assert.Equal(t, keptAccountingTTL, ttl, "kept for a minute while the notices are heard")

	for name, change := range map[string]func() error{
		"a verdict": func() error {
			_, err := db.SetVerdict(ctx, store.RunVerdict{Namespace: "team-ml", JobName: "train-1", Team: "ml",
				Verdict: store.VerdictAccepted, DecidedBy: "bob", DecidedAt: time.Now()})
			return err
		},
		"a shared cost": func() error {
			_, err := db.SetPoolSharedCost(ctx, store.PoolSharedCost{Month: time.Date(month.Year(), month.Month(), 1, 0, 0, 0, 0, time.UTC),
				Pool: "a100", SetBy: "admin", SetAt: time.Now()})
			return err
		},
		"an endpoint's usage": func() error {
			return db.AddEndpointUsage(ctx, []store.EndpointUsageHour{{Team: "ml", Name: "llm", Hour: time.Now(), Requests: 3}})
		},
	} {
		t.Run(name, func(t *testing.T) {
			before := reads()
			require.NoError(t, change())
			assert.Eventually(t, func() bool { view(); return reads() == before+1 }, 5*time.Second, 5*time.Millisecond,
				"computed again once the change is heard")
			view()
			assert.Equal(t, before+1, reads(), "then kept again")
		})
	}

	stopListening()
	_, ttl = shared.heardState()
	assert.Equal(t, teamAccountingTTL, ttl, "without the notices, kept only a few seconds")
}
