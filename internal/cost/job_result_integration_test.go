package cost_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gantry-dev/gantry/internal/audit"
	"github.com/gantry-dev/gantry/internal/cost"
	"github.com/gantry-dev/gantry/internal/devcluster/storetest"
	"github.com/gantry-dev/gantry/internal/money"
	"github.com/gantry-dev/gantry/internal/store"
)

// countedRules counts the reads of teams' acceptance rules.
type countedRules struct {
	*store.Store
	reads atomic.Int64
}

func (c *countedRules) TeamAcceptanceRule(ctx context.Context, team string) (store.AcceptanceRule, error) {
	c.reads.Add(1)
	return c.Store.TeamAcceptanceRule(ctx, team)
}

// Every job page view asks whether the team's rule accepts the job's
// result: the rule is read once per team and kept until a replica turns
// it on or off, a person's verdict still decides over it, and an endpoint
// never asks for it.
func TestJobResultKeepsTheTeamsRuleUntilItChanges(t *testing.T) {
	ctx := context.Background()
	db, changes, _ := storetest.Listening(t)

	ended := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	for _, job := range []string{"train-c", "train-d"} {
		_, err := db.RecordRun(ctx, store.LedgerRow{RunKey: job + "@1", WorkloadUID: job, Team: "vision", Namespace: "team-vision",
			JobName: job, JobKind: "Job", Flavor: "h100", Resource: "nvidia.com/gpu", GPUs: 1, CreatedAt: ended.Add(-2 * time.Hour),
			AdmittedAt: ended.Add(-time.Hour), EndedAt: ended, Outcome: cost.OutcomeSucceeded, AllocatedGPUHours: 1,
			USDPerHour: 4 * money.Dollar, CostUSD: 4 * money.Dollar})
		require.NoError(t, err)
	}
	counted := &countedRules{Store: db}
	acc := &cost.Accounting{Store: counted, Audit: audit.New(db, nil),
		KeptRules: store.NewKept[store.AcceptanceRule](changes, store.TopicAcceptanceRules)}
	result := func(job, kind string) cost.JobResult {
		t.Helper()
		r, err := acc.JobResult(ctx, "vision", "team-vision", job, kind)
		require.NoError(t, err)
		return r
	}
	for range 10 {
		assert.Equal(t, cost.JobResult{}, result("train-c", "training"), "no verdict, the rule is off")
	}
	assert.Equal(t, int64(1), counted.reads.Load(), "ten views, one read of the rule")

	// Another replica turns the rule on from before the run ended.
	_, _, err := db.SetAcceptanceRule(ctx, "vision", true, "bob", ended.Add(-24*time.Hour))
	require.NoError(t, err)
	assert.Eventually(t, func() bool { return result("train-c", "training").ByRule }, 5*time.Second, 10*time.Millisecond,
		"the rule turned on is read again and accepts the succeeded run")

	// A person's verdict decides over the rule.
	_, err = acc.Decide(ctx, cost.Actor{Username: "bob", Via: "browser"}, "vision", "team-vision", "train-d", store.VerdictRejected, "wrong data")
	require.NoError(t, err)
	got := result("train-d", "training")
	require.NotNil(t, got.Verdict)
	assert.Equal(t, store.VerdictRejected, got.Verdict.Verdict)
	assert.False(t, got.ByRule)

	before := counted.reads.Load()
	assert.Equal(t, cost.JobResult{}, result("serve", cost.KindInference), "an endpoint is never accepted by the rule")
	assert.Equal(t, before, counted.reads.Load(), "an endpoint's page does not ask for the rule")
}
