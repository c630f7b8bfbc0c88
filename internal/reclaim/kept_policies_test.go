package reclaim_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gantry-dev/gantry/internal/catalog"
	"github.com/gantry-dev/gantry/internal/devcluster/storetest"
	"github.com/gantry-dev/gantry/internal/reclaim"
	"github.com/gantry-dev/gantry/internal/store"
)

// countedPolicies counts the reads of the idle policies.
type countedPolicies struct {
	*store.Store
	reads atomic.Int64
}

func (c *countedPolicies) IdlePolicies(ctx context.Context) ([]store.IdlePolicy, error) {
	c.reads.Add(1)
	return c.Store.IdlePolicies(ctx)
}

// countedHolds counts the reads of the idle holds, all or one.
type countedHolds struct {
	*store.Store
	reads atomic.Int64
}

func (c *countedHolds) IdleHolds(ctx context.Context) (map[string]store.IdleHold, error) {
	c.reads.Add(1)
	return c.Store.IdleHolds(ctx)
}

func (c *countedHolds) IdleHold(ctx context.Context, launchID string) (store.IdleHold, error) {
	c.reads.Add(1)
	return c.Store.IdleHold(ctx, launchID)
}

// Every job page view asks for its job's hold: the holds (few, each set by
// a person) are read once for all jobs and kept until a replica sets or
// releases one.
func TestKeptIdleHoldsAreReadOnceUntilOneChanges(t *testing.T) {
	ctx := context.Background()
	db, changes, _ := storetest.Listening(t)
	counted := &countedHolds{Store: db}
	r := &reclaim.Reclaimer{Settings: reclaim.DefaultSettings(), Store: counted, Teams: db, Log: slog.New(slog.DiscardHandler),
		KeptHolds: store.NewKept[map[string]store.IdleHold](changes, store.TopicIdleHolds)}
	job := func(n int) store.Launch {
		name := fmt.Sprintf("nb-%d", n)
		return store.Launch{LaunchID: name, Team: "vision", Namespace: "team-vision", Name: name, Kind: string(catalog.KindNotebook)}
	}
	for n := range 10 {
		st, err := r.StateOf(ctx, job(n), false)
		require.NoError(t, err)
		assert.Nil(t, st.Hold)
	}
	assert.Equal(t, int64(1), counted.reads.Load(), "ten jobs' pages, one read of the holds")

	// Another replica exempts one job: this one hears of it.
	require.NoError(t, db.HoldIdle(ctx, store.IdleHold{LaunchID: "nb-3", Namespace: "team-vision", Name: "nb-3", Exempt: true,
		Reason: "long evaluation", HeldBy: "bob", HeldAt: time.Now()}, "", store.AuditEntry{At: time.Now(), Actor: "bob", Action: "idle.exempt", Target: "team-vision/nb-3"}))
	assert.Eventually(t, func() bool {
		st, err := r.StateOf(ctx, job(3), false)
		return err == nil && st.Hold != nil && st.Hold.HeldBy == "bob"
	}, 5*time.Second, 5*time.Millisecond, "the new hold is read")
	st, err := r.StateOf(ctx, job(4), false)
	require.NoError(t, err)
	assert.Nil(t, st.Hold, "another job is not held")
}

// Every job page view and each pass of the loop asks for a job's policy:
// the policies are read once and kept until another replica (or this one)
// changes them, and read every time while nothing listens for changes.
func TestKeptIdlePoliciesAreReadOnceUntilTheyChange(t *testing.T) {
	ctx := context.Background()
	db, changes, stopListening := storetest.Listening(t)
	log := slog.New(slog.DiscardHandler)
	counted := &countedPolicies{Store: db}
	r := &reclaim.Reclaimer{Settings: reclaim.DefaultSettings(), Store: counted, Teams: db, Log: log,
		KeptPolicies: store.NewKept[[]store.IdlePolicy](changes, store.TopicIdlePolicies)}
	threshold := func() float64 {
		p, err := r.PolicyFor(ctx, "vision", catalog.KindNotebook)
		require.NoError(t, err)
		return p.Threshold
	}
	before := threshold()
	for range 9 {
		assert.Equal(t, before, threshold())
	}
	assert.Equal(t, int64(1), counted.reads.Load(), "ten asks, one read")

	// Another replica sets the team's policy: this one hears of it.
	_, err := db.SetIdlePolicy(ctx, store.IdlePolicy{Team: "vision", Kind: string(catalog.KindNotebook), ThresholdPercent: before + 7,
		WindowSeconds: 3600, GraceSeconds: 900, ExtensionSeconds: 3600, UpdatedBy: "lead", UpdatedAt: time.Now()})
	require.NoError(t, err)
	assert.Eventually(t, func() bool { return threshold() == before+7 }, 5*time.Second, 5*time.Millisecond, "the new policy is read")

	stopListening()
	counted.reads.Store(0)
	threshold()
	threshold()
	assert.Equal(t, int64(2), counted.reads.Load(), "every ask reads while nobody listens")
}
