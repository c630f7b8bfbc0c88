package store

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/gantry-dev/gantry/internal/money"
	"github.com/gantry-dev/gantry/internal/servertiming"
)

// jobReads is what a job's page reads of the job's rows.
type jobReads struct {
	Runs       []LedgerRow
	Moments    []JobMoment
	Episode    IdleEpisode
	EpisodeErr error
	Verdict    RunVerdict
	VerdictErr error
}

func readJob(t *testing.T, ctx context.Context, s *Store, ns, job string) jobReads {
	t.Helper()
	var r jobReads
	var err error
	r.Runs, err = s.JobRuns(ctx, ns, job)
	require.NoError(t, err)
	r.Moments, err = s.JobMoments(ctx, ns, job)
	require.NoError(t, err)
	r.Episode, r.EpisodeErr = s.LatestIdleEpisode(ctx, ns, job)
	r.Verdict, r.VerdictErr = s.Verdict(ctx, ns, job)
	return r
}

// A job's page reads the job's runs, moments, latest idle episode and
// verdict in one round trip, and reads exactly what it would have read one
// by one: the same rows in the same order, every column (exact dollars,
// times, absent values) alike, and "not found" where there is nothing.
// Another job read under the same request is read on its own, and so is
// the manifest (its own page's).
func TestAJobsRowsReadTogetherAreTheRowsReadOneByOne(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	const ns, job = "team-vision", "pytorch-train-abcdefgh12"
	now := time.Now().UTC().Truncate(time.Microsecond)

	_, err := s.RecordLaunch(ctx, Launch{LaunchID: "abcdefgh12", Team: "vision", Namespace: ns, Name: job, Kind: "training",
		Template: "pytorch-train", TemplateVersion: 1, Owner: "alice", Parameters: json.RawMessage(`{"gpus":"1"}`),
		Objects: StringList{"Job/" + job}, Manifest: "kind: Job\nmetadata:\n  name: " + job + "\n", CreatedAt: now})
	require.NoError(t, err)
	util := 41.5
	for i, outcome := range []string{"failed", "succeeded"} {
		ended := now.Add(time.Duration(i-2) * time.Hour)
		row := LedgerRow{RunKey: job + "-" + outcome, WorkloadUID: "uid", Team: "vision", Namespace: ns, JobName: job, JobKind: "training",
			Owner: "alice", Flavor: "a100", Resource: "nvidia.com/gpu", GPUs: 2, CreatedAt: ended.Add(-time.Hour), AdmittedAt: ended.Add(-50 * time.Minute),
			EndedAt: ended, Outcome: outcome, Cause: "out-of-memory", WaitSeconds: 600, AllocatedGPUHours: 1.6667,
			USDPerHour: 2*money.Dollar + 123456, CostUSD: 3*money.Dollar + 7}
		if i == 1 {
			row.AvgUtilization, row.MeasuredGPUHours, row.UsefulGPUHours = &util, &util, &util
		}
		_, err := s.RecordRun(ctx, row)
		require.NoError(t, err)
	}
	idx := 3
	for i, key := range []string{"pod-a", "pod-b"} {
		m := JobMoment{Team: "vision", Namespace: ns, Job: job, MomentKey: key, Kind: MomentEnded, At: now.Add(time.Duration(-i) * time.Minute),
			Ending: "failed", Cause: "out-of-memory", Words: "It ran out of memory.", Pod: key, Node: "gpu-node-1"}
		if i == 0 {
			m.PodIndex = &idx
		}
		_, err := s.RecordJobMoment(ctx, m, nil)
		require.NoError(t, err)
	}
	first, err := s.OpenIdleEpisode(ctx, IdleEpisode{LaunchID: "abcdefgh12", Namespace: ns, Name: job, Team: "vision", Kind: "notebook",
		Owner: "alice", ThresholdPercent: 5, WindowSeconds: 1800, IdleSince: now.Add(-time.Hour)}, nil, nil)
	require.NoError(t, err)
	require.NoError(t, s.CloseIdleEpisode(ctx, first.ID, now.Add(-30*time.Minute), "used again"))
	warned := now.Add(-5 * time.Minute)
	_, err = s.OpenIdleEpisode(ctx, IdleEpisode{LaunchID: "abcdefgh12", Namespace: ns, Name: job, Team: "vision", Kind: "notebook",
		Owner: "alice", ThresholdPercent: 5, WindowSeconds: 1800, IdleSince: now.Add(-10 * time.Minute), WarnedAt: &warned,
		IdleCostUSD: money.Dollar/3 + 1}, nil, nil)
	require.NoError(t, err)
	_, err = s.SetVerdict(ctx, RunVerdict{Namespace: ns, JobName: job, Team: "vision", Verdict: "accepted", Note: "good loss", DecidedBy: "bob", DecidedAt: now})
	require.NoError(t, err)

	alone := readJob(t, ctx, s, ns, job)
	require.Len(t, alone.Runs, 2)
	require.Len(t, alone.Moments, 2)
	require.NoError(t, alone.EpisodeErr)
	require.NoError(t, alone.VerdictErr)

	tctx, timing := servertiming.Start(ctx)
	together := readJob(t, s.ReadJobTogether(tctx, ns, job), s, ns, job)
	assert.Equal(t, alone, together, "the rows read together are the rows read one by one")
	_, calls := servertiming.Parse(timing.Header())
	assert.Equal(t, 1, calls["db"], "four reads of one job are one round trip")
	manifest, err := s.LaunchManifest(s.ReadJobTogether(tctx, ns, job), ns, job)
	require.NoError(t, err)
	assert.Equal(t, "kind: Job\nmetadata:\n  name: "+job+"\n", manifest)
	_, calls = servertiming.Parse(timing.Header())
	assert.Equal(t, 2, calls["db"], "the manifest is read on its own")

	// A job with no rows reads "not found" alike, and another job under
	// the same request is read on its own.
	const other = "pytorch-train-zzzzzzzz99"
	lonely := readJob(t, ctx, s, ns, other)
	tctx, timing = servertiming.Start(ctx)
	assert.Equal(t, readJob(t, s.ReadJobTogether(tctx, ns, other), s, ns, other), lonely)
	_, err = s.LaunchManifest(ctx, ns, other)
	assert.ErrorIs(t, err, ErrNotFound)
	for _, err := range []error{lonely.EpisodeErr, lonely.VerdictErr} {
		assert.ErrorIs(t, err, ErrNotFound)
	}
	assert.Empty(t, lonely.Runs)
	assert.Empty(t, lonely.Moments)
	_, calls = servertiming.Parse(timing.Header())
	assert.Equal(t, 1, calls["db"])

	tctx, timing = servertiming.Start(ctx)
	assert.Equal(t, alone, readJob(t, s.ReadJobTogether(tctx, ns, other), s, ns, job), "a job the request did not name")
	_, calls = servertiming.Parse(timing.Header())
	assert.Equal(t, 4, calls["db"])

	// A database that does not answer fails every read in words.
	cctx, cancel := context.WithCancel(s.ReadJobTogether(ctx, ns, job))
	cancel()
	_, err = s.JobRuns(cctx, ns, job)
	assert.ErrorContains(t, err, "read the rows of job team-vision/pytorch-train-abcdefgh12")
	_, err = s.Verdict(cctx, ns, job)
	assert.ErrorIs(t, err, context.Canceled)
}

// Each of a job's own rows is found through an index on the job's name,
// not by reading its whole table: the ledger, the moments and the
// launches grow with every job ever run, and a job's page must cost the
// same with ten runs in the ledger as with a million.
func TestAJobsRowsAreFoundByIndex(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	const ns, job = "team-vision", "pytorch-train-abcdefgh12"
	// The statements readJobRows sends, built once with marks for the
	// job, are the ones gorm builds for this job.
	kept, dry := s.jobRowsSQL(), s.dry()
	for _, q := range []struct {
		name string
		kept jobStatement
		st   *gorm.Statement
	}{
		{"manifest", jobStatement{}, manifestQuery(dry, ns, job).Select("manifest").Find(&[]string{}).Statement},
		{"runs", kept.runs, jobRunsQuery(dry, ns, job).Find(&[]LedgerRow{}).Statement},
		{"moments", kept.moments, jobMomentsQuery(dry, ns, job).Find(&[]JobMoment{}).Statement},
		{"latest idle episode", kept.episode, latestIdleEpisodeQuery(dry, ns, job).Limit(1).Find(&[]IdleEpisode{}).Statement},
		{"verdict", kept.verdict, verdictQuery(dry, ns, job).Limit(1).Find(&[]RunVerdict{}).Statement},
	} {
		name, st := q.name, q.st
		if q.kept.sql != "" { // the manifest is read alone, on its own page
			assert.Equal(t, st.SQL.String(), q.kept.sql, name)
			assert.Equal(t, st.Vars, q.kept.args(ns, job), name)
		}
		var plan []string
		require.NoError(t, s.withPgx(ctx, func(c *pgx.Conn) error {
			return pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
				// An empty table is read whole by choice; with that choice
				// taken away, only an index on the job's name avoids it.
				if _, err := tx.Exec(ctx, "SET LOCAL enable_seqscan = off"); err != nil {
					return err
				}
				rows, err := tx.Query(ctx, "EXPLAIN "+st.SQL.String(), st.Vars...)
				if err != nil {
					return err
				}
				plan, err = pgx.CollectRows(rows, pgx.RowTo[string])
				return err
			})
		}), name)
		text := strings.Join(plan, "\n")
		assert.NotContains(t, text, "Seq Scan", "%s:\n%s", name, text)
		assert.Regexp(t, `Index Cond: .*namespace = `, text, "%s is found by the job's namespace and name:\n%s", name, text)
	}
}
