package quota_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gantry-dev/gantry/internal/audit"
	"github.com/gantry-dev/gantry/internal/quota"
	"github.com/gantry-dev/gantry/internal/store"
)

// failingDatabase is a store whose database fails as a decision commits:
// before the commit (the decision's cluster change is made, then every row
// rolls back) or after it (the rows commit, the answer is lost).
type failingDatabase struct {
	*store.Store
	afterCommit bool
}

// connectionCut is the error of a connection cut as the commit was sent.
func connectionCut() error {
	return store.MarkUnavailable(fmt.Errorf("commit: %w", io.ErrUnexpectedEOF))
}

func (d failingDatabase) DecideQuotaRequest(ctx context.Context, id int64, decide func(store.QuotaRequest) (store.Decision, error)) (store.QuotaRequest, error) {
	if d.afterCommit {
		if _, err := d.Store.DecideQuotaRequest(ctx, id, decide); err != nil {
			return store.QuotaRequest{}, err
		}
		return store.QuotaRequest{}, connectionCut()
	}
	return d.Store.DecideQuotaRequest(ctx, id, func(r store.QuotaRequest) (store.Decision, error) {
		if _, err := decide(r); err != nil {
			return store.Decision{}, err
		}
		return store.Decision{}, connectionCut()
	})
}

func (f *fixture) failingService(t *testing.T, afterCommit bool) *quota.Service {
	db := failingDatabase{Store: openStore(t, f.dsn), afterCommit: afterCommit}
	cqs := &quota.ClusterQueues{Kueue: f.env.Kueue, Kube: f.env.Kube}
	return quota.NewService(db, cqs, audit.New(db, f.clock.Now), slog.New(slog.NewTextHandler(io.Discard, nil)), quota.WithClock(f.clock.Now))
}

// audited counts the audit entries of action about request id.
func (f *fixture) audited(t *testing.T, id int64, action string) int {
	t.Helper()
	entries, _, err := f.db.AuditPage(context.Background(), store.AuditQuery{Team: f.team})
	require.NoError(t, err)
	n := 0
	for _, e := range entries {
		if e.Action == action && e.Target == fmt.Sprintf("quota-request/%d", id) {
			n++
		}
	}
	return n
}

// failedApproval files a request of delta GPUs by alice and has bob approve
// it through a database that fails as the decision commits (before or
// after); it returns the fixture, a service whose database works, and the
// request.
func failedApproval(t *testing.T, delta int64, afterCommit bool) (*fixture, *quota.Service, store.QuotaRequest) {
	t.Helper()
	f := newFixture(t)
	s := f.service(t)
	r := f.file(t, s, f.researcher("alice"), delta, nil)
	_, err := f.failingService(t, afterCommit).Decide(context.Background(), f.lead("bob"), r.ID, true, "go ahead")
	require.ErrorIs(t, err, store.ErrUnavailable, "the lead is told the database did not answer")
	return f, s, r
}

func TestApprovalWhoseCommitFailedAfterTheClusterChangedIsAppliedOnceOnRetry(t *testing.T) {
	f, s, r := failedApproval(t, 2, false)
	ctx := context.Background()
	assert.Equal(t, int64(2), f.nominal(t), "the cluster changed before the database failed")
	open, err := f.db.QuotaRequestByID(ctx, r.ID)
	require.NoError(t, err)
	assert.Equal(t, store.QuotaOpen, open.Status, "no row of the decision was kept")
	assert.Zero(t, f.audited(t, r.ID, quota.ActionApprove))

	decided, err := s.Decide(ctx, f.lead("bob"), r.ID, true, "go ahead")
	require.NoError(t, err)
	assert.Equal(t, store.QuotaApproved, decided.Status)
	assert.Equal(t, int64(2), f.nominal(t), "the retry does not raise the quota again")
	_, err = f.db.GrantByRequest(ctx, r.ID)
	require.NoError(t, err)
	assert.Equal(t, 1, f.audited(t, r.ID, quota.ActionApprove))
	assert.Equal(t, 1, f.audited(t, r.ID, quota.ActionGrant))
}

func TestApprovalWhoseAnswerWasLostAnswersTheRetryAsDecided(t *testing.T) {
	f, s, r := failedApproval(t, 3, true)
	ctx := context.Background()

	decided, err := s.Decide(ctx, f.lead("bob"), r.ID, true, "go ahead")
	require.NoError(t, err, "the same decision again is answered as made")
	assert.Equal(t, store.QuotaApproved, decided.Status)
	assert.Equal(t, int64(3), f.nominal(t), "applied once")
	assert.Equal(t, 1, f.audited(t, r.ID, quota.ActionApprove), "written once")
	notes, err := f.db.Notifications(ctx, "alice", 10)
	require.NoError(t, err)
	assert.Len(t, notes, 1, "one notice")

	_, err = s.Decide(ctx, f.lead("bob"), r.ID, false, "changed my mind")
	var denied *quota.DeniedError
	require.ErrorAs(t, err, &denied, "a different decision is refused")
	assert.Equal(t, "This request was already decided or withdrawn.", denied.Reason)
	_, err = s.Decide(ctx, f.lead("dana"), r.ID, true, "me too")
	require.ErrorAs(t, err, &denied, "another lead's approval is refused")
}

func TestRejectionTakesBackAnApprovalThatReachedOnlyTheCluster(t *testing.T) {
	f, s, r := failedApproval(t, 4, false)
	require.Equal(t, int64(4), f.nominal(t))

	decided, err := s.Decide(context.Background(), f.lead("bob"), r.ID, false, "not this sprint after all")
	require.NoError(t, err)
	assert.Equal(t, store.QuotaRejected, decided.Status)
	assert.Zero(t, f.nominal(t), "the quota the failed approval added is taken back")
}

func TestWithdrawalTakesBackAnApprovalThatReachedOnlyTheCluster(t *testing.T) {
	f, s, r := failedApproval(t, 3, false)
	require.Equal(t, int64(3), f.nominal(t))

	withdrawn, err := s.Withdraw(context.Background(), f.researcher("alice"), r.ID)
	require.NoError(t, err)
	assert.Equal(t, store.QuotaWithdrawn, withdrawn.Status)
	assert.Zero(t, f.nominal(t), "the quota the failed approval added is taken back")
	assert.Equal(t, 1, f.audited(t, r.ID, quota.ActionWithdraw))
}

func TestApprovalThatNeverCommittedIsTakenBackByTheLoopOnce(t *testing.T) {
	f, s, r := failedApproval(t, 2, false)
	ctx := context.Background()
	require.Equal(t, int64(2), f.nominal(t), "the cluster changed before the database failed")

	n, err := s.ReleaseOrphans(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.Zero(t, f.nominal(t), "the cluster agrees with what the lead was told: nothing was done")
	open, err := f.db.QuotaRequestByID(ctx, r.ID)
	require.NoError(t, err)
	assert.Equal(t, store.QuotaOpen, open.Status, "the request waits for a decision")
	assert.Equal(t, 1, f.audited(t, r.ID, quota.ActionRelease))

	n, err = f.service(t).ReleaseOrphans(ctx)
	require.NoError(t, err)
	assert.Zero(t, n, "another replica finds nothing left to take back")
	assert.Zero(t, f.nominal(t))
	assert.Equal(t, 1, f.audited(t, r.ID, quota.ActionRelease))

	_, err = s.Decide(ctx, f.lead("bob"), r.ID, true, "go ahead")
	require.NoError(t, err)
	assert.Equal(t, int64(2), f.nominal(t), "deciding again applies it once")
	n, err = s.ReleaseOrphans(ctx)
	require.NoError(t, err)
	assert.Zero(t, n, "a committed approval is never taken back")
	assert.Equal(t, int64(2), f.nominal(t))
}

// heldDecision is a store whose decision, once its cluster change is made
// and while it holds the request, lets the test act before it commits.
type heldDecision struct {
	*store.Store
	during func()
}

func (d heldDecision) DecideQuotaRequest(ctx context.Context, id int64, decide func(store.QuotaRequest) (store.Decision, error)) (store.QuotaRequest, error) {
	return d.Store.DecideQuotaRequest(ctx, id, func(r store.QuotaRequest) (store.Decision, error) {
		dec, err := decide(r)
		if err == nil {
			d.during()
		}
		return dec, err
	})
}

func TestDecisionInFlightIsNotTakenBack(t *testing.T) {
	f := newFixture(t)
	s := f.service(t)
	ctx := context.Background()
	r := f.file(t, s, f.researcher("alice"), 3, nil)
	released := -1
	db := heldDecision{Store: openStore(t, f.dsn), during: func() {
		var err error
		released, err = f.service(t).ReleaseOrphans(ctx)
		require.NoError(t, err)
	}}
	cqs := &quota.ClusterQueues{Kueue: f.env.Kueue, Kube: f.env.Kube}
	deciding := quota.NewService(db, cqs, audit.New(db, f.clock.Now), slog.New(slog.NewTextHandler(io.Discard, nil)), quota.WithClock(f.clock.Now))
	_, err := deciding.Decide(ctx, f.lead("bob"), r.ID, true, "go ahead")
	require.NoError(t, err)
	assert.Zero(t, released, "the loop skipped the request the decision held")
	assert.Equal(t, int64(3), f.nominal(t))
	assert.Zero(t, f.audited(t, r.ID, quota.ActionRelease))
}
