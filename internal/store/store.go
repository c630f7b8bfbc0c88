// Package store is the portal's PostgreSQL persistence: gorm models,
// context-first queries and the migration runner.
package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/gantry-dev/gantry/internal/problem"
	"github.com/gantry-dev/gantry/internal/servertiming"
)

// ErrNotFound is returned when a requested record does not exist.
var ErrNotFound = problem.New("not found", problem.Problem{Kind: problem.NotFound})

// Store gives access to the portal's database.
type Store struct {
	db *gorm.DB
	// kept are the reads every launch and API call makes (KeepReads);
	// unset, they are read from the database each time.
	kept keptReads
	// jobRowsSQL builds, the first time, the statements a job's page sends
	// (ReadJobTogether).
	jobRowsSQL func() jobRowsStatements
	// pool counts the connections this store opened and the statements
	// it prepared on them (Register).
	pool *poolCounts
	// jobs keeps every job's rows a job's page reads (KeepJobRows); nil,
	// they are read from the database on each view.
	jobs *keptJobs
}

// DefaultMaxConns bounds a replica's connections to PostgreSQL, open and
// idle, unless Open is told otherwise. When nothing is kept (KeepReads:
// the replica hears no notices), a launch reads its token, owner and
// teams at once, then its template, team and allowlist at once: at 50
// launches a second, 25 in flight at the tail, 20 connections made
// launches queue for one (the portal's p99 1.35-1.69× a bare client-go
// create in the same run; 1.19-1.54 with 40, 1.07-1.14 with 60).
const DefaultMaxConns = 60

// Open connects to the PostgreSQL database at dsn. It does not apply migrations.
func Open(ctx context.Context, dsn string) (*Store, error) {
	return OpenWith(ctx, dsn, DefaultMaxConns)
}

// OpenWith is Open with at most maxConns connections (open and idle).
func OpenWith(ctx context.Context, dsn string, maxConns int) (*Store, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	// Each query's round trip counts towards its request's Server-Timing;
	// each connection opened and statement prepared towards the pool's.
	pool := &poolCounts{}
	cfg.Tracer = queryTimer{pool: pool}
	// Queries run in pgx's default mode, each statement prepared once per
	// connection (its statement cache); the description cache serves
	// another mode only, yet each connection would make one of 512 entries
	// (about half of the 4.1 MiB the connections' caches held at 10,000
	// workloads).
	cfg.DescriptionCacheCapacity = 0
	// Each connection opened primes the job page's statements (set once s
	// exists: gorm is told not to open one before).
	var s *Store
	conns := stdlib.OpenDB(*cfg, stdlib.OptionAfterConnect(func(ctx context.Context, c *pgx.Conn) error {
		return s.primeJobRows(ctx, c)
	}))
	db, err := gorm.Open(dialector{&postgres.Dialector{Config: &postgres.Config{DSN: dsn, Conn: conns}}}, &gorm.Config{
		DisableAutomaticPing: true,
		Logger:               logger.Discard,
		NowFunc:              func() time.Time { return time.Now().UTC() },
		TranslateError:       true,
		// A single statement is atomic in PostgreSQL on its own; gorm's
		// default wraps each one in BEGIN and COMMIT, three round trips for
		// one. No model has hooks or associations that would need them,
		// and writes of several statements use Transaction.
		SkipDefaultTransaction: true,
	})
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	sqlDB.SetMaxOpenConns(maxConns)
	// database/sql keeps only 2 idle connections by default: under load every
	// other query would open a new one (a TCP connection, a Postgres backend
	// forked, statements prepared again). Idle ones still close after 5 minutes.
	sqlDB.SetMaxIdleConns(maxConns)
	sqlDB.SetConnMaxIdleTime(5 * time.Minute)
	s = &Store{db: db, pool: pool}
	s.jobRowsSQL = sync.OnceValue(s.buildJobRowsStatements)
	if err := sqlDB.PingContext(ctx); err != nil {
		_ = sqlDB.Close()
		return nil, fmt.Errorf("ping database: %w", err)
	}
	return s, nil
}

// queryTimer is the pgx tracer that counts each query's round trip as a
// wait on the database for the request whose context it runs with, and
// each connection opened and statement prepared in pool.
type queryTimer struct{ pool *poolCounts }

type queryStart struct{}

func (queryTimer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return context.WithValue(ctx, queryStart{}, time.Now())
}

func (queryTimer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryEndData) {
	if t0, ok := ctx.Value(queryStart{}).(time.Time); ok {
		servertiming.Add(ctx, servertiming.DB, time.Since(t0))
	}
}

// A batch (ReadJobTogether) is one round trip, so it counts as one wait.

func (queryTimer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return context.WithValue(ctx, queryStart{}, time.Now())
}

func (queryTimer) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func (t queryTimer) TraceBatchEnd(ctx context.Context, c *pgx.Conn, _ pgx.TraceBatchEndData) {
	t.TraceQueryEnd(ctx, c, pgx.TraceQueryEndData{})
}

// SQL returns the underlying connection pool, for the migration runner and
// the session store.
func (s *Store) SQL() *sql.DB {
	sqlDB, _ := s.db.DB() // cannot fail: Open checked it
	return sqlDB
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.SQL().PingContext(ctx); err != nil {
		return fmt.Errorf("ping database: %w", MarkUnavailable(err))
	}
	var one int
	if err := s.db.WithContext(ctx).Raw("SELECT 1").Scan(&one).Error; err != nil {
		return fmt.Errorf("query database: %w", err)
	}
	return nil
}

// Close closes the connection pool.
func (s *Store) Close() error {
	return s.SQL().Close()
}

// StringList is a list of strings stored as a JSONB array.
type StringList []string

// Value implements driver.Valuer.
func (l StringList) Value() (driver.Value, error) {
	if l == nil {
		return "[]", nil
	}
	b, err := json.Marshal([]string(l))
	if err != nil {
		return nil, fmt.Errorf("encode string list: %w", err)
	}
	return string(b), nil
}

// Scan implements sql.Scanner.
func (l *StringList) Scan(src any) error {
	var raw []byte
	switch v := src.(type) {
	case nil:
		*l = nil
		return nil
	case []byte:
		raw = v
	case string:
		raw = []byte(v)
	default:
		return fmt.Errorf("scan string list from %T", src)
	}
	var out []string
	if err := json.Unmarshal(raw, &out); err != nil {
		return fmt.Errorf("decode string list: %w", err)
	}
	*l = out
	return nil
}

// notFound turns gorm's record-not-found into ErrNotFound.
func notFound(err error) error {
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return ErrNotFound
	}
	return err
}
