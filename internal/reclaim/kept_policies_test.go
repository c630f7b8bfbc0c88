package reclaim_test

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gantry-dev/gantry/internal/catalog"
	"github.com/gantry-dev/gantry/internal/devcluster/stacktest"
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

// Every job page view and each pass of the loop asks for a job's policy:
// the policies are read once and kept until another replica (or this one)
// changes them, and read every time while nothing listens for changes.
func TestKeptIdlePoliciesAreReadOnceUntilTheyChange(t *testing.T) {
	ctx := context.Background()
	dsn := stacktest.Postgres(t)
	db, err := store.Open(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	log := slog.New(slog.DiscardHandler)
	require.NoError(t, store.Migrate(ctx, db.SQL(), log))
	changes := store.NewChanges(dsn, log)
	runCtx, cancel := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() { changes.Run(runCtx); close(stopped) }()
	t.Cleanup(func() { cancel(); <-stopped })
	require.Eventually(t, func() bool { _, ok := changes.Mark(store.TopicIdlePolicies); return ok }, 10*time.Second, 10*time.Millisecond)

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
	_, err = db.SetIdlePolicy(ctx, store.IdlePolicy{Team: "vision", Kind: string(catalog.KindNotebook), ThresholdPercent: before + 7,
		WindowSeconds: 3600, GraceSeconds: 900, ExtensionSeconds: 3600, UpdatedBy: "lead", UpdatedAt: time.Now()})
	require.NoError(t, err)
	assert.Eventually(t, func() bool { return threshold() == before+7 }, 5*time.Second, 5*time.Millisecond, "the new policy is read")

	cancel()
	<-stopped
	counted.reads.Store(0)
	threshold()
	threshold()
	assert.Equal(t, int64(2), counted.reads.Load(), "every ask reads while nobody listens")
}
