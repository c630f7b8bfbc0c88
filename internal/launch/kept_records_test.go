package launch_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gantry-dev/gantry/internal/devcluster/storetest"
	"github.com/gantry-dev/gantry/internal/launch"
	"github.com/gantry-dev/gantry/internal/store"
)

// countedRecords counts the records read from the database one by one,
// and the queries of which workloads have one.
type countedRecords struct {
	*store.Store
	reads, launched, live atomic.Int64
}

func (c *countedRecords) LiveLaunches(ctx context.Context) ([]store.Launch, error) {
	c.live.Add(1)
	return c.Store.LiveLaunches(ctx)
}

func (c *countedRecords) Launched(ctx context.Context, names []store.WorkloadName) (map[store.WorkloadName]bool, error) {
	c.launched.Add(1)
	return c.Store.Launched(ctx, names)
}

func (c *countedRecords) LaunchByName(ctx context.Context, namespace, name string) (store.Launch, error) {
	c.reads.Add(1)
	return c.Store.LaunchByName(ctx, namespace, name)
}

// recordReplica is one portal process's launch records over the shared
// database, with its own listening connection.
type recordReplica struct {
	kept    *launch.KeptRecords
	counted *countedRecords
	changes *store.Changes
	stop    func()
}

func newRecordReplica(t *testing.T, db *store.Store, dsn string) *recordReplica {
	t.Helper()
	changes, stop := storetest.Listen(t, dsn)
	counted := &countedRecords{Store: db}
	return &recordReplica{kept: launch.NewKeptRecords(counted, changes, slog.New(slog.DiscardHandler)), counted: counted,
		changes: changes, stop: stop}
}

const keptNamespace = "team-ml"

func (r *recordReplica) launch(t *testing.T, name string) {
	t.Helper()
	_, err := r.kept.RecordLaunchAudited(context.Background(), keptRecord(name), nil)
	require.NoError(t, err)
}

// keptRecord is the launch record of the workload name.
func keptRecord(name string) store.Launch {
	return store.Launch{LaunchID: "launch-" + name, Team: "ml",
		Namespace: keptNamespace, Name: name, Kind: "training", Template: "pytorch-train", TemplateVersion: 1, Owner: "alice",
		Parameters: json.RawMessage(`{"gpus":"1"}`), Objects: store.StringList{"Job/" + name}, Manifest: "kind: Job\nname: " + name + "\n"}
}

// view is what a job page view on r reads of the record.
func (r *recordReplica) view(t *testing.T, name string) (store.Launch, error) {
	t.Helper()
	return r.kept.LaunchByName(context.Background(), keptNamespace, name)
}

func (r *recordReplica) deletedBy(t *testing.T, name string) string {
	t.Helper()
	rec, err := r.view(t, name)
	require.NoError(t, err)
	if rec.DeletedAt == nil || rec.DeletedBy == nil {
		return ""
	}
	return *rec.DeletedBy
}

// Job pages read their launch record from memory: once every record is
// read, views of a job (or of a name never launched) make no round trip,
// a launch or deletion on any replica is seen once its notice is heard,
// one through this replica on its next view, and nothing is answered
// from memory while the replica does not hear the notices.
func TestLaunchRecordsAreKeptUntilAnyReplicaWritesThem(t *testing.T) {
	ctx := context.Background()
	db, dsn := storetest.Open(t)
	b := newRecordReplica(t, db, dsn)
	// w hears b's launches: b announces them a moment after their commit,
	// and a notice reaching a after it read every record would rightly
	// have a read that record again.
	w := newRecordReplica(t, db, dsn)
	require.NoError(t, w.kept.Load(ctx))
	b.launch(t, "train-1")
	b.launch(t, "train-2")
	for _, name := range []string{"train-1", "train-2"} {
		require.Eventually(t, func() bool { _, err := w.view(t, name); return err == nil }, 10*time.Second, 10*time.Millisecond,
			"b announces the launch of %s", name)
	}
	// a starts listening after both launches were announced: it reads
	// them with the rest.
	a := newRecordReplica(t, db, dsn)
	require.NoError(t, a.kept.Load(ctx))

	for range 5 {
		rec, err := a.view(t, "train-1")
		require.NoError(t, err)
		assert.Equal(t, "alice", rec.Owner)
		assert.Equal(t, store.StringList{"Job/train-1"}, rec.Objects)
		assert.JSONEq(t, `{"gpus":"1"}`, string(rec.Parameters))
		assert.Empty(t, rec.Manifest, "the manifest is not kept")
	}
	_, err := a.view(t, "never-launched")
	assert.ErrorIs(t, err, store.ErrNotFound)
	assert.Zero(t, a.counted.reads.Load(), "six views read no record from the database")
	// The job list asks which of its rows have a record (the others were
	// made with kubectl).
	page := []store.WorkloadName{{Namespace: keptNamespace, Name: "train-2"}, {Namespace: keptNamespace, Name: "kubectl-made"}}
	known, err := a.kept.Launched(ctx, page)
	require.NoError(t, err)
	assert.Equal(t, map[store.WorkloadName]bool{page[0]: true}, known)
	assert.Zero(t, a.counted.launched.Load(), "the job list's question is answered from memory")
	manifest, err := a.kept.LaunchManifest(ctx, keptNamespace, "train-1")
	require.NoError(t, err)
	assert.Equal(t, "kind: Job\nname: train-1\n", manifest)

	t.Run("a launch on another replica is seen once its notice is heard", func(t *testing.T) {
		b.launch(t, "train-3")
		assert.Eventually(t, func() bool { _, err := a.view(t, "train-3"); return err == nil }, 5*time.Second, 5*time.Millisecond)
		reads := a.counted.reads.Load()
		for range 3 {
			_, err := a.view(t, "train-3")
			require.NoError(t, err)
		}
		assert.Equal(t, reads, a.counted.reads.Load(), "read once, then kept")
	})

	t.Run("a deletion on another replica is seen once its notice is heard", func(t *testing.T) {
		assert.Empty(t, a.deletedBy(t, "train-1"))
		require.NoError(t, b.kept.MarkLaunchDeleted(ctx, keptNamespace, "train-1", "bob", time.Now()))
		assert.Eventually(t, func() bool { return a.deletedBy(t, "train-1") == "bob" }, 5*time.Second, 5*time.Millisecond)
	})

	t.Run("a launch or deletion through this replica is seen on its next view", func(t *testing.T) {
		a.launch(t, "train-4")
		_, err := a.view(t, "train-4")
		require.NoError(t, err, "no notice needed")
		assert.Empty(t, a.deletedBy(t, "train-2"))
		require.NoError(t, a.kept.MarkLaunchDeleted(ctx, keptNamespace, "train-2", "carol", time.Now()))
		assert.Equal(t, "carol", a.deletedBy(t, "train-2"), "no notice needed")
	})

	t.Run("the idle loop's live launches are read from memory", func(t *testing.T) {
		a.launch(t, "train-5") // announced: read one by one
		reads := a.counted.reads.Load()
		live, err := a.kept.LiveLaunches(ctx)
		require.NoError(t, err)
		var names []string
		for _, l := range live {
			names = append(names, l.Name)
		}
		assert.Equal(t, []string{"train-3", "train-4", "train-5"}, names, "not deleted, oldest first")
		assert.Zero(t, a.counted.live.Load(), "no list of every live launch from the database")
		// train-5, and those whose write through a was announced back to it
		// since its last view (train-2 and train-4), are read one by one.
		assert.GreaterOrEqual(t, a.counted.reads.Load(), reads+1, "the launch announced since read alone")
		assert.LessOrEqual(t, a.counted.reads.Load(), reads+3, "only the records announced since are read")
	})

	t.Run("after the listening connection is lost, records are read until all are read again", func(t *testing.T) {
		assert.Empty(t, a.deletedBy(t, "train-3"))
		connection, _ := a.changes.Listening()
		// The listeners on this test's own database only: other tests share
		// the server.
		_, err := db.SQL().ExecContext(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
			WHERE datname = current_database() AND query LIKE 'LISTEN %' AND pid <> pg_backend_pid()`)
		require.NoError(t, err)
		require.Eventually(t, func() bool { _, live := a.changes.Listening(); return !live }, 10*time.Second, time.Millisecond,
			"the connection lost")
		// Its notice is sent while a does not listen.
		require.NoError(t, db.MarkLaunchDeleted(ctx, keptNamespace, "train-3", "dave", time.Now()))
		require.Eventually(t, func() bool { now, live := a.changes.Listening(); return live && now != connection },
			10*time.Second, 10*time.Millisecond, "listening again")
		reads := a.counted.reads.Load()
		assert.Equal(t, "dave", a.deletedBy(t, "train-3"))
		assert.Equal(t, reads+1, a.counted.reads.Load(), "read from the database")
		require.NoError(t, a.kept.Load(ctx))
		assert.Equal(t, "dave", a.deletedBy(t, "train-3"))
		assert.Equal(t, reads+1, a.counted.reads.Load(), "kept again once every record was read")
	})

	t.Run("nothing is answered from memory while the replica does not listen", func(t *testing.T) {
		assert.Empty(t, a.deletedBy(t, "train-4"))
		a.stop()
		reads := a.counted.reads.Load()
		require.NoError(t, b.kept.MarkLaunchDeleted(ctx, keptNamespace, "train-4", "erin", time.Now()))
		assert.Equal(t, "erin", a.deletedBy(t, "train-4"), "the copy is not answered without the notices")
		_, err := a.view(t, "never-launched")
		assert.ErrorIs(t, err, store.ErrNotFound)
		assert.Equal(t, reads+2, a.counted.reads.Load(), "each view reads its record")
		known, err := a.kept.Launched(ctx, []store.WorkloadName{{Namespace: keptNamespace, Name: "train-4"}})
		require.NoError(t, err)
		assert.True(t, known[store.WorkloadName{Namespace: keptNamespace, Name: "train-4"}])
		assert.EqualValues(t, 1, a.counted.launched.Load(), "the job list asks the database")
		_, err = a.kept.LiveLaunches(ctx)
		require.NoError(t, err)
		assert.EqualValues(t, 1, a.counted.live.Load(), "the idle loop asks the database")
	})
}

// A launch recorded by a replica that died before it announced it is
// seen by the others once a replica (its restart, say) starts.
func TestALaunchNeverAnnouncedIsSeenOnceAReplicaStarts(t *testing.T) {
	ctx := context.Background()
	db, dsn := storetest.Open(t)
	a := newRecordReplica(t, db, dsn)
	require.NoError(t, a.kept.Load(ctx))
	_, err := db.RecordLaunchAudited(ctx, keptRecord("train-1"), nil) // its replica died right after
	require.NoError(t, err)
	_, err = a.view(t, "train-1")
	require.ErrorIs(t, err, store.ErrNotFound, "not heard of yet")

	started := newRecordReplica(t, db, dsn)
	runCtx, cancel := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() { started.kept.Run(runCtx); close(stopped) }()
	t.Cleanup(func() { cancel(); <-stopped })
	assert.Eventually(t, func() bool { _, err := a.view(t, "train-1"); return err == nil }, 10*time.Second, 10*time.Millisecond,
		"seen once another replica started")
}
