package store

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gantry-dev/gantry/internal/devcluster/stacktest"
)

// The pool's counters say when a view paid for a connection of its own:
// one opened, or statements prepared on it the first time. The job page's
// are prepared as a connection opens, so no view waits for that.
func TestPoolCountsConnectionsOpenedAndStatementsPrepared(t *testing.T) {
	ctx := context.Background()
	_, dsn := newStoreAt(t)
	s, err := OpenWith(ctx, dsn, 1) // one connection, so every view shares it
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, s.Register(reg))

	count := func(name string) float64 {
		t.Helper()
		families, err := reg.Gather()
		require.NoError(t, err)
		for _, f := range families {
			if f.GetName() == name {
				m := f.GetMetric()[0]
				return m.GetCounter().GetValue() + m.GetGauge().GetValue()
			}
		}
		t.Fatalf("no %s", name)
		return 0
	}
	assert.Equal(t, 1.0, count("gantry_db_connections_opened_total"), "Open's ping opened the one connection")
	assert.Positive(t, count("gantry_db_connect_seconds_total"))
	assert.Equal(t, 4.0, count("gantry_db_statements_prepared_total"), "the job page's four statements, prepared as the connection opened")

	viewJob := func() {
		runs, err := s.JobRuns(s.ReadJobTogether(ctx, "team-vision", "pytorch-train-abcdefgh12"), "team-vision", "pytorch-train-abcdefgh12")
		require.NoError(t, err)
		require.Empty(t, runs)
	}
	viewJob()
	viewJob()
	assert.Equal(t, 4.0, count("gantry_db_statements_prepared_total"), "and not again by the job's views")
	assert.Equal(t, 1.0, count("gantry_db_connections_opened_total"))
	assert.Equal(t, 1.0, count("go_sql_open_connections"), "database/sql's pool figures")

	// A connection opened before the database's tables are made (its
	// migrations) still opens; the job's first view prepares them then.
	fresh, err := OpenWith(ctx, stacktest.Postgres(t), 1)
	require.NoError(t, err)
	t.Cleanup(func() { _ = fresh.Close() })
	require.NoError(t, Migrate(ctx, fresh.SQL(), quietLog()))
	before := fresh.pool.prepares.Load()
	_, err = fresh.JobRuns(fresh.ReadJobTogether(ctx, "team-vision", "j"), "team-vision", "j")
	require.NoError(t, err)
	assert.Equal(t, before+4, fresh.pool.prepares.Load())
	assert.Equal(t, int64(1), fresh.pool.connects.Load())
}
