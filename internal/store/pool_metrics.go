package store

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// A connection to PostgreSQL costs its first requests more than its later
// ones: opening it (TCP, SCRAM authentication, a backend forked) and, on
// it, preparing each statement the first time it is sent, with the
// backend's catalog caches still cold. The pool's counters say how often
// that happens, so a burst of slow views can be matched with it.

// poolCounts are a store's connections opened and statements prepared.
type poolCounts struct {
	connects, connectNanos atomic.Int64
	prepares               atomic.Int64
}

type connectStart struct{}

func (t queryTimer) TraceConnectStart(ctx context.Context, _ pgx.TraceConnectStartData) context.Context {
	return context.WithValue(ctx, connectStart{}, time.Now())
}

func (t queryTimer) TraceConnectEnd(ctx context.Context, data pgx.TraceConnectEndData) {
	if data.Err != nil {
		return
	}
	t.pool.connects.Add(1)
	if t0, ok := ctx.Value(connectStart{}).(time.Time); ok {
		t.pool.connectNanos.Add(int64(time.Since(t0)))
	}
}

// TracePrepareStart is called for statements prepared one by one; those a
// batch prepares are counted by preparingJobRows.
func (t queryTimer) TracePrepareStart(ctx context.Context, _ *pgx.Conn, _ pgx.TracePrepareStartData) context.Context {
	return ctx
}

func (t queryTimer) TracePrepareEnd(_ context.Context, _ *pgx.Conn, data pgx.TracePrepareEndData) {
	if data.Err == nil && !data.AlreadyPrepared {
		t.pool.prepares.Add(1)
	}
}

// jobRowsPrepared marks, in a connection's custom data, that it has
// prepared the job page's statements (primeJobRows, readJobRows).
const jobRowsPrepared = "gantry.jobRowsPrepared"

// preparingJobRows counts the statements of the job page's batch b when c
// has not sent them before: sending it prepares them first (pgx does so
// without its prepare tracer). Only one request uses c at a time.
func (p *poolCounts) preparingJobRows(c *pgx.Conn, b *pgx.Batch) {
	data := c.PgConn().CustomData()
	if data[jobRowsPrepared] != nil {
		return
	}
	data[jobRowsPrepared] = true
	p.prepares.Add(int64(b.Len()))
}

// Register adds the store's connection pool figures to reg: database/sql's
// (open, in use, idle, waits for a connection, connections closed), the
// connections opened and the time that took, and the statements prepared.
func (s *Store) Register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{
		collectors.NewDBStatsCollector(s.SQL(), "gantry"),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "gantry_db_connections_opened_total",
			Help: "Connections to PostgreSQL opened by this replica.",
		}, func() float64 { return float64(s.pool.connects.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "gantry_db_connect_seconds_total",
			Help: "Time spent opening connections to PostgreSQL.",
		}, func() float64 { return time.Duration(s.pool.connectNanos.Load()).Seconds() }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "gantry_db_statements_prepared_total",
			Help: "Statements prepared on a connection the first time it sent them.",
		}, func() float64 { return float64(s.pool.prepares.Load()) }),
	} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("register database pool metrics: %w", err)
		}
	}
	return nil
}
