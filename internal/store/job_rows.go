package store

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/gorm"
)

// A job's page reads four small sets of one job's rows, each from a
// different part of the portal: its ended runs, its recorded moments, its
// latest idle episode and its verdict. Read one by one, they are four
// round trips, each of which on a busy machine waits for a core at both
// ends, and the page waits for the slowest. ReadJobTogether lets a request
// read them in one round trip instead, or none when the store keeps every
// job's rows (KeepJobRows).

// jobRows is one request's read of a job's rows, done the first time any
// of them is asked for.
type jobRows struct {
	store          *Store
	namespace, job string

	once     sync.Once
	err      error
	runs     []LedgerRow
	moments  []JobMoment
	episodes []IdleEpisode // zero or one: the newest
	verdicts []RunVerdict  // zero or one
}

type jobRowsKey struct{}

// ReadJobTogether returns ctx under which this store's reads of the named
// job's runs (JobRuns), moments (JobMoments), latest idle episode
// (LatestIdleEpisode) and verdict (Verdict) are all answered from the rows
// kept of the job (KeepJobRows), or else from one round trip, made when the
// first of them is asked for. They are read as they were at that moment: a
// request that writes any of them must not read them again under ctx.
func (s *Store) ReadJobTogether(ctx context.Context, namespace, job string) context.Context {
	return context.WithValue(ctx, jobRowsKey{}, &jobRows{store: s, namespace: namespace, job: job})
}

// together is the rows read together for the job under ctx; false when
// ctx reads this job's rows one by one.
func (s *Store) together(ctx context.Context, namespace, job string) (*jobRows, bool) {
	r, ok := ctx.Value(jobRowsKey{}).(*jobRows)
	if !ok || r.store != s || r.namespace != namespace || r.job != job {
		return nil, false
	}
	r.once.Do(func() {
		if s.jobs != nil {
			r.err = s.jobs.rows(ctx, r, s.readJobRows)
			return
		}
		r.err = s.readJobRows(ctx, r)
	})
	return r, true
}

// readJobRows sends the four queries as one pgx batch: one round trip, one
// connection, one backend woken.
func (s *Store) readJobRows(ctx context.Context, r *jobRows) error {
	b := s.jobRowsBatch(r)
	err := s.withPgx(ctx, func(c *pgx.Conn) error {
		s.pool.preparingJobRows(c, b)
		return c.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return fmt.Errorf("read the rows of job %s/%s: %w", r.namespace, r.job, err)
	}
	return nil
}

// jobRowsBatch is the batch that reads r's job's rows into r.
func (s *Store) jobRowsBatch(r *jobRows) *pgx.Batch {
	ns, job := r.namespace, r.job
	st := s.jobRowsSQL()
	b := &pgx.Batch{}
	queueRows(b, st.runs, ns, job, &r.runs, pgx.RowToStructByName[LedgerRow])
	queueRows(b, st.moments, ns, job, &r.moments, pgx.RowToStructByName[JobMoment])
	queueRows(b, st.episode, ns, job, &r.episodes, pgx.RowToStructByName[IdleEpisode])
	queueRows(b, st.verdict, ns, job, &r.verdicts, pgx.RowToStructByName[RunVerdict])
	return b
}

// primeJobRows sends, on a connection just opened, the job page's batch
// for no job: the new backend prepares its four statements and reads the
// catalog of the tables they use once, before any view does. Unprimed, a
// connection the pool had opened for another page did so in the middle
// of a job page's view: in the 1,000-workload run of 2026-12-06 06:12,
// 11 connections in one phase, its slowest views (80-180 ms against a
// 2.5-4 ms median) waiting in that one round trip.
//
// A database whose tables are not there yet (before its migrations) answers
// with an error and leaves the connection usable: its first view prepares
// them instead.
func (s *Store) primeJobRows(ctx context.Context, c *pgx.Conn) error {
	b := s.jobRowsBatch(&jobRows{})
	err := c.SendBatch(ctx, b).Close()
	if pgErr := (*pgconn.PgError)(nil); errors.As(err, &pgErr) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("prepare the job page's statements on a new connection: %w", err)
	}
	s.pool.preparingJobRows(c, b)
	return nil
}

// jobRowsStatements are the four statements readJobRows sends, the ones the
// one-by-one methods send, built by gorm once per store with marks where
// the job's namespace and name go: building them for each view was a fifth
// of the job page's CPU in the 39th load run.
type jobRowsStatements struct {
	runs, moments, episode, verdict jobStatement
}

// jobStatement is one statement of a job's rows: its SQL and its
// arguments, jobNamespaceMark and jobNameMark standing for the job's.
type jobStatement struct {
	sql  string
	vars []any
}

// The marks hold a NUL, which no Kubernetes name can.
const (
	jobNamespaceMark = "\x00namespace"
	jobNameMark      = "\x00name"
)

func (s *Store) buildJobRowsStatements() jobRowsStatements {
	dry, ns, job := s.dry(), jobNamespaceMark, jobNameMark
	return jobRowsStatements{
		runs:    built[LedgerRow](jobRunsQuery(dry, ns, job)),
		moments: built[JobMoment](jobMomentsQuery(dry, ns, job)),
		episode: built[IdleEpisode](latestIdleEpisodeQuery(dry, ns, job).Limit(1)),
		verdict: built[RunVerdict](verdictQuery(dry, ns, job).Limit(1)),
	}
}

// built is the statement gorm builds for query finding rows of T.
func built[T any](query *gorm.DB) jobStatement {
	st := query.Find(&[]T{}).Statement
	return jobStatement{sql: st.SQL.String(), vars: st.Vars}
}

// args are the statement's arguments for the named job.
func (st jobStatement) args(namespace, job string) []any {
	args := make([]any, len(st.vars))
	for i, v := range st.vars {
		switch v {
		case jobNamespaceMark:
			args[i] = namespace
		case jobNameMark:
			args[i] = job
		default:
			args[i] = v
		}
	}
	return args
}

// queueRows adds the statement for the named job to the batch, its rows
// collected into into.
func queueRows[T any](b *pgx.Batch, st jobStatement, namespace, job string, into *[]T, scan pgx.RowToFunc[T]) {
	b.Queue(st.sql, st.args(namespace, job)...).Query(func(rows pgx.Rows) (err error) {
		*into, err = pgx.CollectRows(rows, scan)
		return err
	})
}

// first is the first of zero or one rows read together, missing when there
// is none, or the error of their one round trip.
func first[T any](r *jobRows, rows []T, missing error) (T, error) {
	var zero T
	if r.err != nil {
		return zero, r.err
	}
	if len(rows) == 0 {
		return zero, missing
	}
	return rows[0], nil
}
