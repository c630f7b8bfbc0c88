package quota_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gantry-dev/gantry/internal/audit"
	"github.com/gantry-dev/gantry/internal/quota"
	"github.com/gantry-dev/gantry/internal/store"
)

var errKilled = errors.New("leader killed")

// dyingStore is the database as a leader sees it that is killed during its
// next revert: before the ClusterQueue changes, or after it changed and
// before the transaction commits. The transaction then rolls back, as
// PostgreSQL rolls back the transaction of a connection whose process died.
type dyingStore struct {
	*store.Store
	afterCluster bool
}

func (d dyingStore) RevertDueGrant(ctx context.Context, now time.Time, revert func(store.QuotaGrant) (store.GrantReverted, error)) (store.QuotaGrant, bool, error) {
	return d.Store.RevertDueGrant(ctx, now, func(g store.QuotaGrant) (store.GrantReverted, error) {
		if d.afterCluster {
			if _, err := revert(g); err != nil {
				return store.GrantReverted{}, err
			}
		}
		return store.GrantReverted{}, errKilled
	})
}

func (f *fixture) dyingLeader(t *testing.T, afterCluster bool) *quota.Service {
	db := openStore(t, f.dsn)
	cqs := &quota.ClusterQueues{Kueue: f.env.Kueue, Kube: f.env.Kube}
	return quota.NewService(dyingStore{Store: db, afterCluster: afterCluster}, cqs, audit.New(db, f.clock.Now),
		slog.New(slog.NewTextHandler(io.Discard, nil)), quota.WithClock(f.clock.Now))
}

// TestLeaderKilledMidRevertRevertsEachGrantOnce: a leader dies while it
// reverts the first of two expired grants, before or after the
// ClusterQueue changed; the next leader reverts both. The quota is back
// to the base exactly (not lowered twice), each grant has one expiry in
// the audit log and its requester one notice.
func TestLeaderKilledMidRevertRevertsEachGrantOnce(t *testing.T) {
	for name, afterCluster := range map[string]bool{"before the ClusterQueue changed": false, "after the ClusterQueue changed, before the commit": true} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			s := f.service(t)
			admin := quota.Actor{Username: "erin", Admin: true}
			base := f.file(t, s, f.researcher("alice"), 2, nil)
			_, err := s.Decide(ctx, admin, base.ID, true, "base")
			require.NoError(t, err)
			first, second := f.clock.Now().Add(time.Hour), f.clock.Now().Add(90*time.Minute)
			var ids []int64
			for i, until := range []time.Time{first, second} {
				r := f.file(t, s, f.researcher("alice"), int64(3-i), &until)
				_, err := s.Decide(ctx, admin, r.ID, true, "for the deadline")
				require.NoError(t, err)
				ids = append(ids, r.ID)
			}
			require.Equal(t, int64(2+3+2), f.nominal(t))
			f.clock.Advance(2 * time.Hour)

			n, err := f.dyingLeader(t, afterCluster).ExpireDue(ctx)
			require.ErrorIs(t, err, errKilled)
			assert.Zero(t, n)
			want := int64(7)
			if afterCluster {
				want = 4 // the first grant left the ClusterQueue; the database never heard
			}
			require.Equal(t, want, f.nominal(t))
			g, err := f.db.GrantByRequest(ctx, ids[0])
			require.NoError(t, err)
			require.Nil(t, g.RevertedAt, "the killed leader's transaction rolled back")

			n, err = f.service(t).ExpireDue(ctx)
			require.NoError(t, err)
			assert.Equal(t, 2, n, "the next leader reverts both grants")
			assert.Equal(t, int64(2), f.nominal(t), "back to the base exactly: no grant subtracted twice")
			n, err = f.service(t).ExpireDue(ctx)
			require.NoError(t, err)
			assert.Zero(t, n, "and a third finds nothing left")
			assert.Equal(t, int64(2), f.nominal(t))

			for _, id := range ids {
				g, err := f.db.GrantByRequest(ctx, id)
				require.NoError(t, err)
				assert.NotNil(t, g.RevertedAt)
			}
			entries, _, err := f.db.AuditPage(ctx, store.AuditQuery{Action: quota.ActionExpire})
			require.NoError(t, err)
			var targets []string
			for _, e := range entries {
				targets = append(targets, e.Target)
			}
			assert.ElementsMatch(t, []string{fmt.Sprintf("quota-request/%d", ids[0]), fmt.Sprintf("quota-request/%d", ids[1])}, targets, "one expiry entry per grant")
			notes, err := f.db.Notifications(ctx, "alice", 50)
			require.NoError(t, err)
			ended := 0
			for _, n := range notes {
				if strings.Contains(n.Text, "ended and was reverted") {
					ended++
				}
			}
			assert.Equal(t, 2, ended, "alice is told once per grant")
		})
	}
}

// TestStalledLeaderAndNewLeaderRevertAGrantOnce: the old leader stalls
// (lost its Lease, not dead) holding a grant's row after changing the
// ClusterQueue; the new leader skips the locked row, and once the old
// leader's transaction dies, reverts it without lowering the quota again.
func TestStalledLeaderAndNewLeaderRevertAGrantOnce(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	s := f.service(t)
	until := f.clock.Now().Add(time.Hour)
	r := f.file(t, s, f.researcher("alice"), 3, &until)
	_, err := s.Decide(ctx, f.lead("bob"), r.ID, true, "for the deadline")
	require.NoError(t, err)
	require.Equal(t, int64(3), f.nominal(t))
	f.clock.Advance(2 * time.Hour)

	stalled, release := make(chan struct{}), make(chan struct{})
	old := openStore(t, f.dsn)
	done := make(chan error, 1)
	go func() {
		_, _, err := old.RevertDueGrant(ctx, f.clock.Now(), func(g store.QuotaGrant) (store.GrantReverted, error) {
			err := (&quota.ClusterQueues{Kueue: f.env.Kueue, Kube: f.env.Kube}).Revert(ctx,
				quota.Change{GrantKey: g.RequestID, Team: g.Team, Flavor: g.Flavor, Resource: gpu, Delta: g.Delta})
			if err != nil {
				return store.GrantReverted{}, err
			}
			close(stalled)
			<-release
			return store.GrantReverted{}, errKilled
		})
		done <- err
	}()
	<-stalled
	assert.Equal(t, int64(0), f.nominal(t))
	next := f.service(t)
	n, err := next.ExpireDue(ctx)
	require.NoError(t, err)
	assert.Zero(t, n, "the row is locked by the stalled leader: skipped, not reverted again")
	close(release)
	require.ErrorIs(t, <-done, errKilled)

	n, err = next.ExpireDue(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.Equal(t, int64(0), f.nominal(t), "the quota is lowered once")
	entries, _, err := f.db.AuditPage(ctx, store.AuditQuery{Action: quota.ActionExpire})
	require.NoError(t, err)
	assert.Len(t, entries, 1)
}
