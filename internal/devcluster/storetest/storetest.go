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
	"github.com/gantry-dev/gantry/internal/store"
)

// Open returns a migrated database of the test's own, closed when the
// test ends, and its DSN.
func Open(t *testing.T) (db *store.Store, dsn string) {
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
