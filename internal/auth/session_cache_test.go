package auth

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alexedwards/scs/postgresstore"
	"github.com/alexedwards/scs/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gantry-dev/gantry/internal/devcluster/storetest"
	"github.com/gantry-dev/gantry/internal/servertiming"
	"github.com/gantry-dev/gantry/internal/store"
)

// countedSessions counts the sessions read from the database.
type countedSessions struct {
	sessionRows
	finds atomic.Int64
}

func (c *countedSessions) findRow(ctx context.Context, token string) ([]byte, time.Time, bool, error) {
	c.finds.Add(1)
	return c.sessionRows.findRow(ctx, token)
}

// replica is one portal process's session store over the shared database,
// with its own listening connection.
type replica struct {
	store   sessionStore
	counted *countedSessions
	changes *store.Changes
	stop    func()
}

func newReplica(t *testing.T, dsn string, db *store.Store, idleTimeout time.Duration) *replica {
	t.Helper()
	changes, stop := storetest.Listen(t, dsn)
	counted := &countedSessions{sessionRows: pgSessions{PostgresStore: postgresstore.New(db.SQL()), db: db.SQL()}}
	return &replica{store: newSessionStore(counted, changes, scs.GobCodec{}, idleTimeout, slog.New(slog.DiscardHandler)), counted: counted, changes: changes, stop: stop}
}

// twoReplicas are two portal processes' session stores (30-minute idle
// timeout) over one database.
func twoReplicas(t *testing.T) (db *store.Store, dsn string, a, b *replica) {
	t.Helper()
	db, dsn = storetest.Open(t)
	return db, dsn, newReplica(t, dsn, db, 30*time.Minute), newReplica(t, dsn, db, 30*time.Minute)
}

// commit writes a session through r and waits until r has heard the
// notice of its own write (which drops its copy once more), and so has
// every other replica given: a replica reading the session while the
// notice is on its way does not keep what it read.
func commit(t *testing.T, r *replica, token string, data []byte, expiry time.Time, others ...*replica) {
	t.Helper()
	before := make([]uint64, len(others))
	for i, o := range others {
		before[i] = drops(o)
	}
	mine := drops(r)
	require.NoError(t, r.store.Commit(token, data, expiry))
	require.Eventually(t, func() bool { return drops(r) >= mine+3 }, 5*time.Second, 5*time.Millisecond,
		"the two drops around the write and its notice")
	for i, o := range others {
		require.Eventually(t, func() bool { return drops(o) >= before[i]+1 }, 5*time.Second, 5*time.Millisecond,
			"another replica hears the notice")
	}
}

// drops counts the copies a replica has dropped (see keptSessions.changed).
func drops(r *replica) uint64 {
	r.store.kept.mu.Lock()
	defer r.store.kept.mu.Unlock()
	return r.store.kept.changed
}

func encodeSession(t *testing.T, deadline time.Time, user string) []byte {
	t.Helper()
	b, err := scs.GobCodec{}.Encode(deadline, map[string]any{keyUserID: user})
	require.NoError(t, err)
	return b
}

// userOf is the user a replica's view would see signed in ("" for none).
func userOf(t *testing.T, r *replica, token string) string {
	t.Helper()
	b, found, err := r.store.Find(token)
	require.NoError(t, err)
	if !found {
		return ""
	}
	_, values, err := scs.GobCodec{}.Decode(b)
	require.NoError(t, err)
	user, _ := values[keyUserID].(string)
	return user
}

// A page view reads its session from PostgreSQL about once a minute, not
// on every view; a sign-out on any replica still ends the session on the
// next view, and nothing is kept while the replica cannot hear changes.
func TestSessionsAreKeptUntilAnyReplicaWritesOrDeletesThem(t *testing.T) {
	ctx := context.Background()
	_, _, a, b := twoReplicas(t)
	deadline := time.Now().Add(12 * time.Hour)
	commit(t, a, "tok-alice", encodeSession(t, deadline, "alice"), time.Now().Add(30*time.Minute))
	commit(t, a, "tok-bob", encodeSession(t, deadline, "bob"), time.Now().Add(30*time.Minute))

	for range 5 {
		assert.Equal(t, "alice", userOf(t, a, "tok-alice"))
	}
	assert.EqualValues(t, 1, a.counted.finds.Load(), "five views of one session read it once")

	// A view's Server-Timing counts its session's read as a wait on the
	// database, and nothing when the session was kept.
	waits := func(token string) int {
		ctx, timing := servertiming.Start(ctx)
		_, _, err := a.store.FindCtx(ctx, token)
		require.NoError(t, err)
		_, calls := servertiming.Parse(timing.Header())
		return calls["db"]
	}
	assert.Equal(t, 0, waits("tok-alice"))
	assert.Equal(t, 1, waits("tok-nobody"))

	t.Run("a session written on another replica is read again", func(t *testing.T) {
		assert.Equal(t, "bob", userOf(t, a, "tok-bob"))
		require.NoError(t, b.store.Commit("tok-bob", encodeSession(t, deadline, "bob-renamed"), time.Now().Add(30*time.Minute)))
		assert.Eventually(t, func() bool { return userOf(t, a, "tok-bob") == "bob-renamed" }, 5*time.Second, 5*time.Millisecond)
		finds := a.counted.finds.Load()
		assert.Equal(t, "alice", userOf(t, a, "tok-alice"))
		assert.Equal(t, finds, a.counted.finds.Load(), "another session's copy stays")
	})

	t.Run("a sign-out on another replica ends the session", func(t *testing.T) {
		assert.Equal(t, "alice", userOf(t, a, "tok-alice"))
		require.NoError(t, b.store.Delete("tok-alice"))
		assert.Eventually(t, func() bool { return userOf(t, a, "tok-alice") == "" }, 5*time.Second, 5*time.Millisecond,
			"signed out everywhere once the notice is heard")
	})

	t.Run("a sign-out on this replica ends the session at once", func(t *testing.T) {
		require.NoError(t, a.store.Commit("tok-carol", encodeSession(t, deadline, "carol"), time.Now().Add(30*time.Minute)))
		assert.Equal(t, "carol", userOf(t, a, "tok-carol"))
		require.NoError(t, a.store.Delete("tok-carol"))
		assert.Equal(t, "", userOf(t, a, "tok-carol"), "no notice needed")
	})

	t.Run("a session is not answered past its deadline", func(t *testing.T) {
		soon := time.Now().Add(300 * time.Millisecond)
		require.NoError(t, a.store.Commit("tok-dave", encodeSession(t, soon, "dave"), soon))
		assert.Equal(t, "dave", userOf(t, a, "tok-dave"))
		time.Sleep(time.Until(soon) + 50*time.Millisecond)
		assert.Equal(t, "", userOf(t, a, "tok-dave"))
	})

	t.Run("nothing is kept while the replica does not listen", func(t *testing.T) {
		require.NoError(t, a.store.Commit("tok-erin", encodeSession(t, deadline, "erin"), time.Now().Add(30*time.Minute)))
		assert.Equal(t, "erin", userOf(t, a, "tok-erin"))
		a.stop()
		finds := a.counted.finds.Load()
		require.NoError(t, b.store.Delete("tok-erin"))
		assert.Equal(t, "", userOf(t, a, "tok-erin"), "the copy is not answered without the notices")
		assert.Equal(t, "", userOf(t, a, "tok-erin"))
		assert.Equal(t, finds+2, a.counted.finds.Load(), "each view reads its session")
	})
}

// A session is kept for at most a quarter of the idle timeout, the longest
// a used session goes unwritten, so a copy never outlives its row's idle
// deadline.
func TestKeptSessionHoldFollowsTheIdleTimeout(t *testing.T) {
	hold := func(idle time.Duration) time.Duration {
		return newSessionStore(&countedSessions{}, store.NewChanges("", slog.New(slog.DiscardHandler)), scs.GobCodec{}, idle, slog.New(slog.DiscardHandler)).kept.hold
	}
	assert.Equal(t, 2*time.Second, hold(8*time.Second))
	assert.Equal(t, 30*time.Second, hold(30*time.Minute))
	assert.Equal(t, 30*time.Second, hold(0))
	assert.Nil(t, newSessionStore(&countedSessions{}, nil, scs.GobCodec{}, time.Minute, slog.New(slog.DiscardHandler)).kept, "nothing kept without notices")
}

// sessionNotices records the sessions the database announces a change
// of, by token hash, as every replica hears them.
func sessionNotices(t *testing.T, dsn string) func(token string) bool {
	t.Helper()
	var mu sync.Mutex
	heard := map[string]bool{}
	changes := store.NewChanges(dsn, slog.New(slog.DiscardHandler))
	changes.Follow(store.SessionNotices, func(hash string) { mu.Lock(); defer mu.Unlock(); heard[hash] = true })
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { changes.Run(ctx); close(stopped) }()
	t.Cleanup(func() { cancel(); <-stopped })
	require.Eventually(t, func() bool { _, live := changes.Listening(); return live }, 10*time.Second, 10*time.Millisecond)
	return func(token string) bool { mu.Lock(); defer mu.Unlock(); return heard[tokenHash(token)] }
}

// expiryOf is the idle deadline of a session's row.
func expiryOf(t *testing.T, db *store.Store, token string) time.Time {
	t.Helper()
	var expiry time.Time
	require.NoError(t, db.SQL().QueryRowContext(context.Background(), `SELECT expiry FROM sessions WHERE token = $1`, token).Scan(&expiry))
	return expiry
}

// Pushing back a used session's idle deadline (about once a minute) writes
// its row's expiry alone: no replica is told, so none reads the session
// again, and the replica that renewed it answers its copy up to the new
// deadline.
func TestARenewalKeepsEveryReplicasCopy(t *testing.T) {
	ctx := context.Background()
	db, dsn, a, b := twoReplicas(t)
	deadline := time.Now().Add(12 * time.Hour)
	soon := time.Now().Add(time.Minute).Truncate(time.Microsecond)
	commit(t, a, "tok-alice", encodeSession(t, deadline, "alice"), soon, b)
	assert.Equal(t, "alice", userOf(t, a, "tok-alice"))
	assert.Equal(t, "alice", userOf(t, b, "tok-alice"))
	finds := a.counted.finds.Load() + b.counted.finds.Load()
	heard := sessionNotices(t, dsn)

	later := soon.Add(20 * time.Minute)
	b.store.renew(ctx, "tok-alice", later)
	assert.WithinDuration(t, later, expiryOf(t, db, "tok-alice"), time.Microsecond, "the row's idle deadline is pushed back")
	b.store.renew(ctx, "tok-alice", soon)
	assert.WithinDuration(t, later, expiryOf(t, db, "tok-alice"), time.Microsecond, "a renewal never brings a deadline forward")

	// Notices arrive in commit order: once bob's sign-in is heard, a
	// notice of alice's renewal would have been.
	require.NoError(t, b.store.Commit("tok-bob", encodeSession(t, deadline, "bob"), soon))
	require.Eventually(t, func() bool { return heard("tok-bob") }, 5*time.Second, 5*time.Millisecond)
	assert.False(t, heard("tok-alice"), "alice's renewal was announced")
	assert.Equal(t, "alice", userOf(t, a, "tok-alice"))
	assert.Equal(t, "alice", userOf(t, b, "tok-alice"))
	assert.Equal(t, finds, a.counted.finds.Load()+b.counted.finds.Load(), "neither replica read alice's session again")

	found := &foundSession{}
	_, ok, err := b.store.FindCtx(context.WithValue(ctx, foundSessionKey{}, found), "tok-alice")
	require.NoError(t, err)
	require.True(t, ok)
	assert.WithinDuration(t, later, found.expiry, time.Microsecond, "the replica that renewed the session knows its new deadline")
}

// A person clicking through pages never waits on the database for their
// session once it is kept: a copy in the last quarter of its hold is
// answered, and read again after the view.
func TestAKeptSessionIsReadAgainBeforeItsHoldEnds(t *testing.T) {
	ctx := context.Background()
	db, dsn := storetest.Open(t)
	// A 24 s idle timeout holds copies 6 s and reads them again in the last 1.5 s.
	a := newReplica(t, dsn, db, 24*time.Second)
	commit(t, a, "tok-alice", encodeSession(t, time.Now().Add(12*time.Hour), "alice"), time.Now().Add(time.Hour))
	require.Equal(t, "alice", userOf(t, a, "tok-alice"))

	waited := 0
	for end := time.Now().Add(12 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		vctx, timing := servertiming.Start(ctx)
		b, ok, err := a.store.FindCtx(vctx, "tok-alice")
		require.NoError(t, err)
		require.True(t, ok)
		require.NotEmpty(t, b)
		if _, calls := servertiming.Parse(timing.Header()); calls["db"] > 0 {
			waited++
		}
	}
	assert.Zero(t, waited, "views that waited on the database for their session")
	assert.Equal(t, int64(3), a.counted.finds.Load(), "read once, then again about every 4.5-6 s")
}
