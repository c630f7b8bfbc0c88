// Package storetest gives integration tests of figures kept until the
// database announces a change a migrated PostgreSQL database of their own
// and a store.Changes that listens on it.
package storetest

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gantry-dev/gantry/internal/devcluster/stacktest"
	"github.com/gantry-dev/gantry/internal/money"
	"github.com/gantry-dev/gantry/internal/store"
)

// Open returns a migrated database of the test's own, closed when the
// test ends, and its DSN.
func Open(t testing.TB) (db *store.Store, dsn string) {
	t.Helper()
	ctx := context.Background()
	dsn = stacktest.Postgres(t)
	db, err := store.Open(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	require.NoError(t, store.Migrate(ctx, db.SQL(), slog.New(slog.DiscardHandler)))
	return db, dsn
}

// Listen returns a Changes listening on dsn, once it listens; stop (also
// called when the test ends) closes its connection, as a replica cut off
// from the database would see it.
func Listen(t *testing.T, dsn string) (changes *store.Changes, stop func()) {
	t.Helper()
	changes = store.NewChanges(dsn, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { changes.Run(ctx); close(stopped) }()
	stop = sync.OnceFunc(func() { cancel(); <-stopped })
	t.Cleanup(stop)
	require.Eventually(t, func() bool { _, live := changes.Listening(); return live }, 10*time.Second, 10*time.Millisecond,
		"listening for the database's change notices")
	return changes, stop
}

// Listening returns a migrated database of the test's own and a Changes
// listening on it.
func Listening(t *testing.T) (db *store.Store, changes *store.Changes, stop func()) {
	t.Helper()
	db, dsn := Open(t)
	changes, stop = Listen(t, dsn)
	return db, changes, stop
}

// SeedLedger writes runs ended runs of three teams (vision, nlp, speech),
// spread evenly from month to now, each with its launch record, as the
// 50,000-workload load run's ledger is: what the pages' figures read after
// each ended run.
func SeedLedger(t testing.TB, db *store.Store, month, now time.Time, runs int) {
	t.Helper()
	ctx := context.Background()
	_, err := db.SQL().ExecContext(ctx, `INSERT INTO launches (launch_id, team, namespace, name, kind, template, template_version, owner, created_at)
		SELECT 'bench-' || i, t, 'team-' || t, 'job-' || i, 'training', 'pytorch', 1, 'user-' || (i % 50), $1
		FROM generate_series(1, $2::int) i, LATERAL (SELECT (ARRAY['vision', 'nlp', 'speech'])[1 + i % 3] AS t) x`, month, runs)
	require.NoError(t, err)
	_, err = db.SQL().ExecContext(ctx, `INSERT INTO cost_ledger (run_key, workload_uid, team, namespace, job_name, job_kind, flavor,
			resource, gpus, created_at, admitted_at, ended_at, outcome, wait_seconds, allocated_gpu_hours, avg_utilization,
			measured_gpu_hours, useful_gpu_hours, usd_per_hour, cost_usd)
		SELECT 'run-' || i, 'uid-' || i, t, 'team-' || t, 'job-' || i, 'Job', 'h100', 'nvidia.com/gpu', 8, e - interval '2 hours',
			e - interval '1 hour', e, (ARRAY['succeeded', 'failed', 'evicted'])[1 + i % 3], 60 + i % 600, 8, 50, 8, 4, 4, 32
		FROM generate_series(1, $3::int) i,
			LATERAL (SELECT (ARRAY['vision', 'nlp', 'speech'])[1 + i % 3] AS t, $1::timestamptz + ($2::float8 * i / $3) * interval '1 second' AS e) x`,
		month, now.Sub(month).Seconds(), runs)
	require.NoError(t, err)
	_, err = db.SQL().ExecContext(ctx, "ANALYZE cost_ledger, launches")
	require.NoError(t, err)
}

// RecordEndedRun records a run of team that ended now, with its launch:
// a new ledger version.
func RecordEndedRun(t testing.TB, db *store.Store, team, name string) {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC()
	_, err := db.RecordLaunch(ctx, store.Launch{LaunchID: name, Team: team, Namespace: "team-" + team, Name: name, Kind: "training",
		Template: "pytorch", TemplateVersion: 1, Owner: "user-1", Parameters: []byte(`{}`), CreatedAt: now.Add(-2 * time.Hour)})
	require.NoError(t, err)
	_, err = db.RecordRun(ctx, store.LedgerRow{RunKey: name, WorkloadUID: name, Team: team, Namespace: "team-" + team, JobName: name,
		JobKind: "Job", Flavor: "h100", Resource: "nvidia.com/gpu", GPUs: 8, CreatedAt: now.Add(-2 * time.Hour), AdmittedAt: now.Add(-time.Hour),
		EndedAt: now, Outcome: "succeeded", WaitSeconds: 60, AllocatedGPUHours: 8, USDPerHour: 4 * money.Dollar, CostUSD: 32 * money.Dollar})
	require.NoError(t, err)
}
