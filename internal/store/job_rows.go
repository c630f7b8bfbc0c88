package store

import (
	"context"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"
	"gorm.io/gorm"
)

// A job's page reads five small sets of one job's rows, each from a
// different part of the portal: the launch's manifest, its ended runs, its
// recorded moments, its latest idle episode and its verdict. Read one by
// one, they are five round trips, each of which on a busy machine waits
// for a core at both ends, and the page waits for the slowest.
// ReadJobTogether lets a request read them in one round trip instead.

// jobRows is one request's read of a job's rows, done the first time any
// of them is asked for.
type jobRows struct {
	store          *Store
	namespace, job string

	once     sync.Once
	err      error
	manifest []string // zero or one: the launch's, if there is one
	runs     []LedgerRow
	moments  []JobMoment
	episodes []IdleEpisode // zero or one: the newest
	verdicts []RunVerdict  // zero or one
}

type jobRowsKey struct{}

// ReadJobTogether returns ctx under which this store's reads of the named
// job's manifest (LaunchManifest), runs (JobRuns), moments (JobMoments),
// latest idle episode (LatestIdleEpisode) and verdict (Verdict) are all
// answered from one round trip, made when the first of them is asked for.
// They are read as they were at that moment: a request that writes any of
// them must not read them again under ctx.
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
	r.once.Do(func() { r.err = s.readJobRows(ctx, r) })
	return r, true
}

// readJobRows sends the five queries as one pgx batch: one round trip, one
// connection, one backend woken.
func (s *Store) readJobRows(ctx context.Context, r *jobRows) error {
	ns, job := r.namespace, r.job
	// The statements the one-by-one methods send.
	dry := s.dry()
	b := &pgx.Batch{}
	queueRows(b, manifestQuery(dry, ns, job).Select("manifest"), &r.manifest, pgx.RowTo[string])
	queueRows(b, jobRunsQuery(dry, ns, job), &r.runs, pgx.RowToStructByName[LedgerRow])
	queueRows(b, jobMomentsQuery(dry, ns, job), &r.moments, pgx.RowToStructByName[JobMoment])
	queueRows(b, latestIdleEpisodeQuery(dry, ns, job).Limit(1), &r.episodes, pgx.RowToStructByName[IdleEpisode])
	queueRows(b, verdictQuery(dry, ns, job).Limit(1), &r.verdicts, pgx.RowToStructByName[RunVerdict])

	err := s.withPgx(ctx, func(c *pgx.Conn) error { return c.SendBatch(ctx, b).Close() })
	if err != nil {
		return fmt.Errorf("read the rows of job %s/%s: %w", ns, job, err)
	}
	return nil
}

// queueRows adds the query to the batch, its rows collected into into.
func queueRows[T any](b *pgx.Batch, query *gorm.DB, into *[]T, scan pgx.RowToFunc[T]) {
	st := query.Find(&[]T{}).Statement
	b.Queue(st.SQL.String(), st.Vars...).Query(func(rows pgx.Rows) (err error) {
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
