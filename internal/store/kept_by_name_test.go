package store

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const testNotices = "test:"

// keptByNameListening is a KeptByName over a Changes that listens as if
// connected, and a way to deliver it a notice as the database would.
func keptByNameListening(t *testing.T) (*KeptByName[string], *Changes, func(rest string)) {
	t.Helper()
	changes := NewChanges("", slog.New(slog.DiscardHandler))
	changes.live, changes.session = true, 1 // as if listening
	k := NewKeptByName[string](changes, testNotices, 3)
	notice := func(rest string) {
		fn, r, ok := changes.follower(testNotices + rest)
		require.True(t, ok)
		fn(r)
	}
	return k, changes, notice
}

func readAll(values map[WorkloadName]string, complete bool) func(context.Context) (map[WorkloadName]string, bool, error) {
	return func(context.Context) (map[WorkloadName]string, bool, error) {
		out := make(map[WorkloadName]string, len(values))
		for n, v := range values {
			out[n] = v
		}
		return out, complete, nil
	}
}

var (
	jobA = WorkloadName{Namespace: "team-a", Name: "a"}
	jobB = WorkloadName{Namespace: "team-a", Name: "b"}
	jobC = WorkloadName{Namespace: "team-a", Name: "c"}
)

// What a view finds kept: nothing before every value is read, every value
// after, and a value announced since only once a view read it again, and
// not when it was announced again while that view read it.
func TestKeptByNameAnswersOnlyWhatNoNoticeHasNamedSince(t *testing.T) {
	k, _, notice := keptByNameListening(t)

	_, found, known, look := k.Lookup(jobA)
	assert.False(t, found || known, "nothing is answered before every value is read")
	assert.False(t, look.Keeps(), "nor kept")

	require.NoError(t, k.Load(context.Background(), readAll(map[WorkloadName]string{jobA: "a1"}, false)))
	v, found, known, _ := k.Lookup(jobA)
	assert.True(t, found && known)
	assert.Equal(t, "a1", v)
	_, found, known, look = k.Lookup(jobB)
	assert.False(t, found || known, "a workload not read is not known without every value")
	k.Keep(look, jobB, "b1", true)
	v, found, _, _ = k.Lookup(jobB)
	assert.True(t, found, "a value read after the lookup is kept")
	assert.Equal(t, "b1", v)

	notice("team-a/a")
	_, found, known, look = k.Lookup(jobA)
	assert.False(t, found || known, "an announced value is read again")
	notice("team-a/a") // announced again while that view read it
	k.Keep(look, jobA, "a2", true)
	_, found, _, look = k.Lookup(jobA)
	assert.False(t, found, "a value announced while it was read is not kept")
	k.Keep(look, jobA, "a3", true)
	v, found, _, _ = k.Lookup(jobA)
	assert.True(t, found)
	assert.Equal(t, "a3", v)

	k.Forget(jobB) // this replica's own write
	_, found, _, _ = k.Lookup(jobB)
	assert.False(t, found, "this replica's own write is read on its next view")
}

// A notice heard while every value is read leaves that value out of the
// copy; a notice of every value, or a new connection, leaves nothing kept.
func TestKeptByNameKeepsNothingAnnouncedWhileItReadsEveryValue(t *testing.T) {
	k, changes, notice := keptByNameListening(t)
	values := map[WorkloadName]string{jobA: "a1", jobB: "b1"}
	require.NoError(t, k.Load(context.Background(), func(ctx context.Context) (map[WorkloadName]string, bool, error) {
		notice("team-a/b")
		return readAll(values, true)(ctx)
	}))
	_, found, _, _ := k.Lookup(jobA)
	assert.True(t, found)
	_, found, known, _ := k.Lookup(jobB)
	assert.False(t, found || known, "the value announced while all were read is read again")

	require.NoError(t, k.Load(context.Background(), func(ctx context.Context) (map[WorkloadName]string, bool, error) {
		notice("*")
		return readAll(values, true)(ctx)
	}))
	_, _, known, _ = k.Lookup(jobA)
	assert.False(t, known, "nothing is kept when every value was announced while they were read")

	require.NoError(t, k.Load(context.Background(), readAll(values, true)))
	_, _, known, _ = k.Lookup(jobA)
	assert.True(t, known)
	changes.mu.Lock()
	changes.session = 2 // the connection was lost and made again: notices may be lost
	changes.mu.Unlock()
	_, _, known, look := k.Lookup(jobA)
	assert.False(t, known, "nothing read under an earlier connection is answered")
	k.Keep(look, jobA, "a2", true)
	_, _, known, _ = k.Lookup(jobA)
	assert.False(t, known, "nor kept until every value is read again")
}

// With every value read (complete), a workload without one is known to
// have none until a notice names it; All hands over every value and the
// workloads announced since, or refuses when it cannot.
func TestKeptByNameKnowsWhatHasNoValueWhenComplete(t *testing.T) {
	k, _, notice := keptByNameListening(t)
	require.NoError(t, k.Load(context.Background(), readAll(map[WorkloadName]string{jobA: "a1"}, true)))
	_, found, known, _ := k.Lookup(jobB)
	assert.True(t, known && !found, "a workload not among every value has none")

	notice("team-a/b")
	_, _, known, look := k.Lookup(jobB)
	assert.False(t, known, "until it is announced")
	all := map[WorkloadName]string{}
	unknown, ok := k.All(1, func(n WorkloadName, v string) { all[n] = v })
	require.True(t, ok)
	assert.Equal(t, map[WorkloadName]string{jobA: "a1"}, all)
	assert.Equal(t, []WorkloadName{jobB}, unknown)
	_, ok = k.All(0, func(WorkloadName, string) {})
	assert.False(t, ok, "more announced than the caller reads one by one")

	k.Keep(look, jobB, "", false)
	_, found, known, _ = k.Lookup(jobB)
	assert.True(t, known && !found, "read again and found without a value, it is known to have none")
	unknown, _ = k.All(0, func(WorkloadName, string) {})
	assert.Empty(t, unknown)

	// At most max values are kept; past it, a workload not kept is no
	// longer known to have none.
	jobD := WorkloadName{Namespace: "team-a", Name: "d"}
	for _, n := range []WorkloadName{jobB, jobC, jobD} {
		notice(n.Namespace + "/" + n.Name)
		_, _, _, look := k.Lookup(n)
		k.Keep(look, n, n.Name, true)
	}
	_, found, _, _ = k.Lookup(jobC)
	assert.True(t, found)
	assert.Equal(t, 3, k.Len())
	_, _, known, _ = k.Lookup(jobD)
	assert.False(t, known, "a value left out for room is read from the database")
	_, ok = k.All(10, func(WorkloadName, string) {})
	assert.False(t, ok, "every value is no longer at hand")
}

// fakeReads is a database's values as Refresh reads them: what each read
// asked for, and a notice a read may deliver while it reads.
type fakeReads struct {
	mu     sync.Mutex
	values map[WorkloadName]string
	asked  [][]WorkloadName
	// during is called inside the next read, once.
	during func()
	fail   error
}

func (f *fakeReads) set(n WorkloadName, v string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.values[n] = v
}

func (f *fakeReads) read(_ context.Context, names []WorkloadName) (map[WorkloadName]string, error) {
	f.mu.Lock()
	f.asked = append(f.asked, slices.Clone(names))
	out := map[WorkloadName]string{}
	for _, n := range names {
		if v, ok := f.values[n]; ok {
			out[n] = v
		}
	}
	during, fail := f.during, f.fail
	f.during = nil
	f.mu.Unlock()
	if during != nil {
		during()
	}
	return out, fail
}

func (f *fakeReads) reads() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.asked)
}

// A value a notice names is read again in the background, a burst of
// notices in one read, and kept before any view asks for it; unless it was
// announced again while it was read, when it is read once more. A failed
// read leaves those values to their next views.
func TestKeptByNameReadsWhatNoticesNameAgainBeforeItsNextView(t *testing.T) {
	k, _, notice := keptByNameListening(t)
	db := &fakeReads{values: map[WorkloadName]string{jobA: "a1", jobB: "b1"}}
	require.NoError(t, k.Load(context.Background(), readAll(db.values, false)))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { k.Refresh(ctx, db.read, slog.New(slog.DiscardHandler), "refresh"); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	require.Eventually(t, func() bool { k.mu.Lock(); defer k.mu.Unlock(); return k.refreshing }, 5*time.Second, time.Millisecond)

	kept := func(n WorkloadName) string {
		v, found, _, _ := k.Lookup(n)
		if !found {
			return ""
		}
		return v
	}
	// Two writes committed, then their notices.
	db.set(jobA, "a2")
	db.set(jobB, "b2")
	notice("team-a/a")
	notice("team-a/b")
	require.Eventually(t, func() bool { return kept(jobA) == "a2" && kept(jobB) == "b2" }, 5*time.Second, time.Millisecond,
		"read again and kept with no view asking")
	db.mu.Lock()
	var asked []WorkloadName
	for _, a := range db.asked {
		asked = append(asked, a...)
	}
	db.mu.Unlock()
	assert.ElementsMatch(t, []WorkloadName{jobA, jobB}, asked, "each read once")

	// Written (and announced) again while the background read reads it:
	// what that read found is not kept; it is read once more.
	reads := db.reads()
	db.set(jobA, "a3")
	db.mu.Lock()
	db.during = func() { db.set(jobA, "a4"); notice("team-a/a") }
	db.mu.Unlock()
	notice("team-a/a")
	require.Eventually(t, func() bool { return kept(jobA) == "a4" }, 5*time.Second, time.Millisecond)
	assert.Equal(t, reads+2, db.reads())

	// A read that failed: its values wait for their next view.
	db.mu.Lock()
	db.fail = errors.New("connection refused")
	db.mu.Unlock()
	db.set(jobB, "b3")
	notice("team-a/b")
	require.Eventually(t, func() bool { return db.reads() == reads+3 }, 5*time.Second, time.Millisecond)
	_, found, known, _ := k.Lookup(jobB)
	assert.False(t, found || known, "a value whose read failed is read by its next view")
}
