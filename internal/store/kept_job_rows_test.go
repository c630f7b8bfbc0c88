package store

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gantry-dev/gantry/internal/servertiming"
)

// keepingStore is a migrated store on a fresh database that keeps every
// job's rows, listening; and its DSN, for another replica.
func keepingStore(t *testing.T) (*Store, *JobRowsKeeper, string) {
	t.Helper()
	ctx := context.Background()
	s, dsn := newStoreAt(t)
	changes := NewChanges(dsn, quietLog())
	keeper := s.KeepJobRows(changes, quietLog())
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { changes.Run(runCtx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	require.Eventually(t, func() bool { _, live := changes.Listening(); return live }, 10*time.Second, 10*time.Millisecond, "listening")
	return s, keeper, dsn
}

// viewJob reads a job's rows as its page does, and how many round trips
// to PostgreSQL that took.
func viewJob(t *testing.T, s *Store, ns, job string) (jobReads, int) {
	t.Helper()
	ctx, timing := servertiming.Start(context.Background())
	r := readJob(t, s.ReadJobTogether(ctx, ns, job), s, ns, job)
	_, calls := servertiming.Parse(timing.Header())
	return r, calls["db"]
}

func launchJob(t *testing.T, s *Store, ns, job string) {
	t.Helper()
	_, err := s.RecordLaunch(context.Background(), Launch{LaunchID: "id-" + job, Team: "vision", Namespace: ns, Name: job, Kind: "training",
		Template: "pytorch-train", TemplateVersion: 1, Owner: "alice", Parameters: json.RawMessage(`{}`), Objects: StringList{"Job/" + job},
		Manifest: "kind: Job", CreatedAt: time.Now().UTC()})
	require.NoError(t, err)
}

// Every launched job's rows are kept once the replica listens: its page
// reads none from PostgreSQL and shows exactly what it would have read
// there. A write through this replica shows on its next view; another
// replica's once its notice arrives; a job launched since is read on its
// first view and kept from then on.
func TestAJobsPageReadsItsKeptRowsAndEveryChangeOfThem(t *testing.T) {
	s, keeper, dsn := keepingStore(t)
	ctx := context.Background()
	const ns, job, quiet = "team-vision", "pytorch-train-abcdefgh12", "pytorch-train-quiet00001"
	now := time.Now().UTC().Truncate(time.Microsecond)
	launchJob(t, s, ns, job)
	launchJob(t, s, ns, quiet)
	_, err := s.RecordRun(ctx, LedgerRow{RunKey: job + "-1", WorkloadUID: "uid", Team: "vision", Namespace: ns, JobName: job, JobKind: "training",
		Owner: "alice", Flavor: "a100", Resource: "nvidia.com/gpu", GPUs: 2, CreatedAt: now.Add(-2 * time.Hour), AdmittedAt: now.Add(-time.Hour),
		EndedAt: now, Outcome: "failed", Cause: "out-of-memory", AllocatedGPUHours: 2})
	require.NoError(t, err)
	_, err = s.RecordJobMoment(ctx, JobMoment{Team: "vision", Namespace: ns, Job: job, MomentKey: "pod-a", Kind: MomentEnded, At: now,
		Ending: "failed", Cause: "out-of-memory", Words: "It ran out of memory.", Pod: "pod-a", Node: "gpu-node-1"}, nil)
	require.NoError(t, err)

	want, calls := viewJob(t, s, ns, job)
	require.Equal(t, 1, calls, "nothing is kept before every job's rows are read")
	require.NoError(t, keeper.Load(ctx))
	var got jobReads
	// The notices of the writes above may come after the read of every
	// job's rows: each has its job read once more.
	assert.Eventually(t, func() bool { r, calls := viewJob(t, s, ns, job); got = r; return calls == 0 }, 10*time.Second, 10*time.Millisecond,
		"a launched job's rows are kept")
	assert.Equal(t, want, got, "and are the rows PostgreSQL holds")
	require.Len(t, got.Runs, 1)
	require.Len(t, got.Moments, 1)
	lonely, calls := viewJob(t, s, ns, quiet)
	assert.Equal(t, 0, calls, "a job without rows is known to have none")
	assert.Empty(t, lonely.Runs)
	assert.ErrorIs(t, lonely.VerdictErr, ErrNotFound)

	// This replica's own writes: its next view reads them.
	_, err = s.SetVerdict(ctx, RunVerdict{Namespace: ns, JobName: job, Team: "vision", Verdict: "accepted", Note: "good loss", DecidedBy: "bob", DecidedAt: now})
	require.NoError(t, err)
	got, calls = viewJob(t, s, ns, job)
	assert.Equal(t, 1, calls, "a job written through this replica is read again")
	require.NoError(t, got.VerdictErr)
	assert.Equal(t, "accepted", got.Verdict.Verdict)
	ep, err := s.OpenIdleEpisode(ctx, IdleEpisode{LaunchID: "id-" + job, Namespace: ns, Name: job, Team: "vision", Kind: "notebook",
		Owner: "alice", ThresholdPercent: 5, WindowSeconds: 1800, IdleSince: now.Add(-time.Hour)}, nil, nil)
	require.NoError(t, err)
	got, _ = viewJob(t, s, ns, job)
	require.NoError(t, got.EpisodeErr)
	assert.Nil(t, got.Episode.ClosedAt, "the episode just opened")
	require.NoError(t, s.CloseIdleEpisode(ctx, ep.ID, now, "used again"))
	got, calls = viewJob(t, s, ns, job)
	assert.Equal(t, 1, calls, "an episode closed by its id is this job's")
	require.NotNil(t, got.Episode.ClosedAt, "the episode closed")
	assert.Equal(t, "used again", got.Episode.CloseReason)
	assert.Eventually(t, func() bool { _, calls := viewJob(t, s, ns, job); return calls == 0 }, 10*time.Second, 10*time.Millisecond,
		"kept again once read (the write's own notice, heard after this replica's next view, has it read once more)")

	// Another replica's writes: heard from the database a moment after
	// their commit, for every table the page reads.
	other, err := Open(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = other.Close() })
	seen := func(what string, ok func(jobReads) bool) {
		t.Helper()
		assert.Eventually(t, func() bool { r, _ := viewJob(t, s, ns, quiet); return ok(r) }, 10*time.Second, 10*time.Millisecond, what)
	}
	_, err = other.RecordRun(ctx, LedgerRow{RunKey: quiet + "-1", WorkloadUID: "uid-q", Team: "vision", Namespace: ns, JobName: quiet,
		JobKind: "training", Owner: "alice", Flavor: "a100", Resource: "nvidia.com/gpu", GPUs: 1, AdmittedAt: now.Add(-time.Hour), EndedAt: now,
		Outcome: "succeeded", AllocatedGPUHours: 1})
	require.NoError(t, err)
	seen("another replica's ended run", func(r jobReads) bool { return len(r.Runs) == 1 })
	_, err = other.RecordJobMoment(ctx, JobMoment{Team: "vision", Namespace: ns, Job: quiet, MomentKey: "pod-q", Kind: MomentStarted, At: now,
		Pod: "pod-q", Node: "gpu-node-2"}, nil)
	require.NoError(t, err)
	seen("another replica's moment", func(r jobReads) bool { return len(r.Moments) == 1 })
	_, err = other.OpenIdleEpisode(ctx, IdleEpisode{LaunchID: "id-" + quiet, Namespace: ns, Name: quiet, Team: "vision", Kind: "notebook",
		Owner: "alice", ThresholdPercent: 5, WindowSeconds: 1800, IdleSince: now}, nil, nil)
	require.NoError(t, err)
	seen("another replica's idle episode", func(r jobReads) bool { return r.EpisodeErr == nil })
	_, err = other.SetVerdict(ctx, RunVerdict{Namespace: ns, JobName: quiet, Team: "vision", Verdict: "rejected", DecidedBy: "bob", DecidedAt: now})
	require.NoError(t, err)
	seen("another replica's verdict", func(r jobReads) bool { return r.VerdictErr == nil && r.Verdict.Verdict == "rejected" })
	fromDB, _ := viewJob(t, other, ns, quiet)
	kept, _ := viewJob(t, s, ns, quiet)
	assert.Equal(t, fromDB, kept)

	// A job launched since every row was read, or never launched through
	// the portal: read on its first view, kept from then on.
	const later = "pytorch-train-later0001"
	launchJob(t, other, ns, later)
	_, calls = viewJob(t, s, ns, later)
	assert.Equal(t, 1, calls)
	assert.Eventually(t, func() bool { _, calls := viewJob(t, s, ns, later); return calls == 0 }, 10*time.Second, 10*time.Millisecond)
	_, err = other.RecordRun(ctx, LedgerRow{RunKey: later + "-1", WorkloadUID: "uid-l", Team: "vision", Namespace: ns, JobName: later,
		JobKind: "training", Owner: "alice", Flavor: "a100", Resource: "nvidia.com/gpu", GPUs: 1, AdmittedAt: now.Add(-time.Hour), EndedAt: now,
		Outcome: "succeeded", AllocatedGPUHours: 1})
	require.NoError(t, err)
	assert.Eventually(t, func() bool { r, _ := viewJob(t, s, ns, later); return len(r.Runs) == 1 }, 10*time.Second, 10*time.Millisecond)

	// A view changes only its own copy.
	r := readJob(t, s.ReadJobTogether(ctx, ns, job), s, ns, job)
	r.Runs[0].Outcome = "changed by a view"
	again, _ := viewJob(t, s, ns, job)
	assert.Equal(t, "failed", again.Runs[0].Outcome)

	// The listening connection lost: nothing is answered from memory
	// until every job's rows are read again under the new one.
	var killed int
	require.NoError(t, s.SQL().QueryRowContext(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND query LIKE 'LISTEN %'`).Scan(&killed))
	require.Equal(t, 1, killed)
	assert.Eventually(t, func() bool { _, calls := viewJob(t, s, ns, job); return calls == 1 }, 5*time.Second, 5*time.Millisecond,
		"read from PostgreSQL once the connection is lost")
	assert.Eventually(t, func() bool {
		require.NoError(t, keeper.Load(ctx))
		_, calls := viewJob(t, s, ns, job)
		return calls == 0
	}, 10*time.Second, 20*time.Millisecond, "kept again once read under the new connection")

	// Every copy dropped at once (a table emptied).
	_, err = other.SQL().ExecContext(ctx, "TRUNCATE run_verdicts")
	require.NoError(t, err)
	assert.Eventually(t, func() bool { r, _ := viewJob(t, s, ns, job); return r.VerdictErr != nil }, 10*time.Second, 10*time.Millisecond)
}

// Rows another replica writes (the ledger's loop recording a burst of
// ended runs, say) are read again in the background once their notices
// come: each job's next view reads nothing from PostgreSQL and shows them,
// a job made outside the portal included.
func TestJobsRowsChangedElsewhereAreKeptBeforeTheirNextView(t *testing.T) {
	s, keeper, dsn := keepingStore(t)
	const ns = "team-vision"
	var jobs []string
	for i := range 40 {
		jobs = append(jobs, fmt.Sprintf("pytorch-train-burst%05d", i))
		launchJob(t, s, ns, jobs[i])
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { keeper.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	outside := "made-with-kubectl"
	kept := func(job string) *keptJob {
		j, found, _, _ := s.jobs.Lookup(WorkloadName{Namespace: ns, Name: job})
		if !found {
			return nil
		}
		return j
	}
	require.Eventually(t, func() bool { return kept(jobs[0]) != nil && kept(jobs[len(jobs)-1]) != nil }, 20*time.Second,
		10*time.Millisecond, "every launched job's rows read")
	_, calls := viewJob(t, s, ns, outside)
	require.Equal(t, 1, calls, "a job without a launch record is read on its first view")
	require.Eventually(t, func() bool { return kept(outside) != nil }, 10*time.Second, 10*time.Millisecond)

	other, err := Open(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = other.Close() })
	now := time.Now().UTC().Truncate(time.Microsecond)
	for _, job := range append(slices.Clone(jobs), outside) {
		_, err := other.RecordRun(ctx, LedgerRow{RunKey: job + "-1", WorkloadUID: "uid-" + job, Team: "vision", Namespace: ns, JobName: job,
			JobKind: "training", Owner: "alice", Flavor: "a100", Resource: "nvidia.com/gpu", GPUs: 1, AdmittedAt: now.Add(-time.Hour),
			EndedAt: now, Outcome: "succeeded", AllocatedGPUHours: 1})
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool {
		for _, job := range append(slices.Clone(jobs), outside) {
			if j := kept(job); j == nil || len(j.runs) != 1 {
				return false
			}
		}
		return true
	}, 20*time.Second, 10*time.Millisecond, "every changed job's rows read again, with no view asking")
	for _, job := range append(slices.Clone(jobs), outside) {
		r, calls := viewJob(t, s, ns, job)
		assert.Equal(t, 0, calls, "%s's next view reads nothing from PostgreSQL", job)
		if assert.Len(t, r.Runs, 1, job) {
			assert.Equal(t, job+"-1", r.Runs[0].RunKey)
		}
	}
}

// A job's rows are kept whole: a view of the kept copy reads every field
// of every row as it was read from PostgreSQL.
func TestKeptJobRowsCarryEveryField(t *testing.T) {
	at := time.Now().UTC()
	idx, util := 3, 41.5
	m := JobMoment{ID: 7, Team: "vision", Namespace: "team-vision", Job: "train", MomentKey: "pod-end/uid", Kind: MomentEnded, At: at,
		Ending: "failed", Cause: "out-of-memory", Words: "It ran out of memory.", Pod: "train-abcde", Node: "gpu-node-1", PodIndex: &idx,
		RecordedAt: at.Add(time.Second)}
	requireEveryField(t, m)
	run := LedgerRow{RunKey: "k", WorkloadUID: "uid", Team: "vision", Namespace: "team-vision", JobName: "train", JobKind: "training",
		Owner: "alice", Flavor: "a100", Resource: "nvidia.com/gpu", GPUs: 2, CreatedAt: at, AdmittedAt: at, EndedAt: at, Outcome: "failed",
		Reason: "r", Cause: "c", WaitSeconds: 1, AllocatedGPUHours: 2, AvgUtilization: &util, MeasuredGPUHours: &util, UsefulGPUHours: &util,
		USDPerHour: 3, CostUSD: 6, RecordedAt: at, Seq: 9}
	e := IdleEpisode{ID: 1, LaunchID: "l", Namespace: "team-vision", Name: "train", Kind: "notebook"}
	v := RunVerdict{Namespace: "team-vision", JobName: "train", Verdict: "accepted"}

	read := &jobRows{namespace: "team-vision", job: "train", runs: []LedgerRow{run}, moments: []JobMoment{m}, episodes: []IdleEpisode{e},
		verdicts: []RunVerdict{v}}
	r := &jobRows{namespace: "team-vision", job: "train"}
	keepJob(read).fill(r, WorkloadName{Namespace: "team-vision", Name: "train"})
	assert.Equal(t, []JobMoment{m}, r.moments)
	assert.Equal(t, []LedgerRow{run}, r.runs)
	assert.Equal(t, []IdleEpisode{e}, r.episodes)
	assert.Equal(t, []RunVerdict{v}, r.verdicts)
}

// requireEveryField fails unless every field of v is set: a field added to
// a kept row's type must be set here, and carried.
func requireEveryField(t *testing.T, v any) {
	t.Helper()
	rv := reflect.ValueOf(v)
	for i := range rv.NumField() {
		require.False(t, rv.Field(i).IsZero(), "%s.%s is not set", rv.Type().Name(), rv.Type().Field(i).Name)
	}
}
