package store

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// keptByNameReload is how often a replica reads every kept value again,
// and keptByNameMaxAge how long it answers from a copy it could not read
// again: should a notice be lost without the listening connection
// noticing, a stale value lives at most that long.
const (
	keptByNameReload = 5 * time.Minute
	keptByNameMaxAge = 2 * keptByNameReload
)

// keptByNameRetry is the pause after a failed read of every value.
const keptByNameRetry = 10 * time.Second

// keptByNameGather is how long Refresh collects notices before it reads
// the values they named: the portal's loops write many rows in a row (the
// ledger, a job's pods' moments), and one read answers them all.
// keptByNameRefreshBatch bounds the values one read asks for.
const (
	keptByNameGather       = 200 * time.Millisecond
	keptByNameRefreshBatch = 500
)

// KeptByName keeps one value a workload (its launch record, its job's
// rows) in memory while the database's notices are heard (Changes), so
// that views read none of them from PostgreSQL. Every write of a value is
// announced to every replica by a notice that names its workload ("*"
// for every workload); the replica forgets that value, and its next view
// reads it again and keeps it, unless it was announced again meanwhile;
// where Refresh runs, it reads the value again in the background a moment
// after the notice, so that the next view seldom has to.
//
// The values are read all at once (Load) when the replica starts
// listening, again after it lost its connection, and every
// keptByNameReload; until then, and whenever it does not listen, every
// view reads PostgreSQL. A value announced while a view reads it, or while
// the whole set is read, is not kept: the next view reads it again.
type KeptByName[V any] struct {
	changes *Changes
	max     int

	mu sync.Mutex
	// byName is every value, read under connection at loadedAt, but those
	// in unknown: announced since (with the count of drops then), to be
	// read again. loads counts the times they were all read.
	byName     map[WorkloadName]V
	unknown    map[WorkloadName]uint64
	complete   bool // every workload with a value has it in byName
	loaded     bool
	connection uint64
	loadedAt   time.Time
	loads      uint64
	drops      uint64
	// heardWhileLoading collects what is announced while every value is
	// read; nil when none is.
	heardWhileLoading *heardNames
	// announced collects, while Refresh runs (refreshing), the workloads
	// notices named since, to be read again; wake tells Refresh of them.
	refreshing bool
	announced  map[WorkloadName]struct{}
	wake       chan struct{}
}

type heardNames struct {
	names map[WorkloadName]uint64
	all   bool
}

// NewKeptByName keeps at most max values while changes listens, forgetting
// those the notices that start with prefix name ("<namespace>/<name>").
func NewKeptByName[V any](changes *Changes, prefix string, max int) *KeptByName[V] {
	k := &KeptByName[V]{changes: changes, max: max, announced: map[WorkloadName]struct{}{}, wake: make(chan struct{}, 1)}
	changes.Follow(prefix, k.heard)
	return k
}

// heard forgets the value a notice names ("*": every value).
func (k *KeptByName[V]) heard(rest string) {
	if rest == "*" {
		k.mu.Lock()
		defer k.mu.Unlock()
		k.loads++
		k.byName, k.unknown, k.loaded = nil, nil, false
		clear(k.announced) // every value is read again (Run)
		if k.heardWhileLoading != nil {
			k.heardWhileLoading.all = true
		}
		return
	}
	namespace, name, ok := strings.Cut(rest, "/")
	if !ok {
		return
	}
	n := WorkloadName{Namespace: namespace, Name: name}
	k.Forget(n)
	k.mu.Lock()
	defer k.mu.Unlock()
	k.announceLocked(n)
}

// announceLocked has Refresh, if it runs, read n's value again.
func (k *KeptByName[V]) announceLocked(n WorkloadName) {
	if !k.refreshing || len(k.announced) >= k.max {
		return // its next view reads it
	}
	k.announced[n] = struct{}{}
	select {
	case k.wake <- struct{}{}:
	default:
	}
}

// Forget has the next view read the value of n from PostgreSQL: this
// replica's own writes take effect on its next view, before their notice
// comes.
func (k *KeptByName[V]) Forget(n WorkloadName) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.drops++
	delete(k.byName, n)
	if k.unknown != nil {
		k.unknown[n] = k.drops
	}
	if k.heardWhileLoading != nil {
		k.heardWhileLoading.names[n] = k.drops
	}
}

// answersLocked reports whether the kept values may be answered now.
func (k *KeptByName[V]) answersLocked(now time.Time) bool {
	connection, live := k.changes.Listening()
	return live && k.loaded && connection == k.connection && now.Sub(k.loadedAt) < keptByNameMaxAge
}

// KeptLookup is what memory said of a workload's value when a view
// looked (KeptByName.Lookup): what a read from PostgreSQL after it may
// keep.
type KeptLookup struct {
	n          WorkloadName
	answers    bool
	loads      uint64
	seq        uint64
	wasUnknown bool
}

// Keeps reports whether a value read after the lookup may be kept (Keep):
// not while the values may not be answered.
func (l KeptLookup) Keeps() bool { return l.answers }

// Lookup is what memory says of n's value: known is false when it cannot
// say (the values may not be answered now, or n's was announced since
// they were read, or n is not among them and they are not complete), and
// found whether n has a value. A view that reads n's value from
// PostgreSQL after an unknown answer hands it to Keep with look.
func (k *KeptByName[V]) Lookup(n WorkloadName) (v V, found, known bool, look KeptLookup) {
	k.mu.Lock()
	defer k.mu.Unlock()
	look = k.lookLocked(n)
	if look.answers {
		if v, ok := k.byName[n]; ok {
			return v, true, true, look
		}
		if k.complete && !look.wasUnknown {
			return v, false, true, look
		}
	}
	return v, false, false, look
}

// lookLocked is what memory says of n now, for a read after it to be
// kept by (Keep): a view's (Lookup) and Refresh's (takeAnnounced) alike.
func (k *KeptByName[V]) lookLocked(n WorkloadName) KeptLookup {
	look := KeptLookup{n: n, answers: k.answersLocked(time.Now()), loads: k.loads}
	look.seq, look.wasUnknown = k.unknown[n]
	return look
}

// Keep keeps v as the value of the workload look is of (keyed by n, equal
// to it), read from PostgreSQL after look, unless it was announced (or
// every value read) since; found is false when it has no value. Past max
// values it keeps none, and no longer takes a workload it does not keep
// to have none.
func (k *KeptByName[V]) Keep(look KeptLookup, n WorkloadName, v V, found bool) {
	if !look.Keeps() {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	seq, unknown := k.unknown[look.n]
	if k.loads != look.loads || unknown != look.wasUnknown || seq != look.seq || !k.answersLocked(time.Now()) {
		return
	}
	delete(k.unknown, look.n)
	switch {
	case !found:
	case len(k.byName) < k.max:
		k.byName[n] = v
	default:
		// A value left out: a workload not kept may have one now.
		k.complete = false
	}
}

// Len is how many values are kept now (a size to make room for before All).
func (k *KeptByName[V]) Len() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.byName)
}

// All hands every kept value to fn and returns the workloads announced
// since they were all read, which fn did not see; ok is false (and fn is
// not called) when the values may not be answered, are not complete, or
// more than maxUnknown were announced.
func (k *KeptByName[V]) All(maxUnknown int, fn func(WorkloadName, V)) (unknown []WorkloadName, ok bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.answersLocked(time.Now()) || !k.complete || len(k.unknown) > maxUnknown {
		return nil, false
	}
	for n, v := range k.byName {
		fn(n, v)
	}
	unknown = make([]WorkloadName, 0, len(k.unknown))
	for n := range k.unknown {
		unknown = append(unknown, n)
	}
	return unknown, true
}

// Run reads every value (Load with read) whenever the replica listens
// under a connection it has not read them under, and every
// keptByNameReload, until ctx ends; a failed read is logged as what, and
// tried again after keptByNameRetry.
func (k *KeptByName[V]) Run(ctx context.Context, read func(context.Context) (map[WorkloadName]V, bool, error), log *slog.Logger, what string) {
	due := func(connection uint64, now time.Time) bool {
		k.mu.Lock()
		defer k.mu.Unlock()
		return !k.loaded || k.connection != connection || now.Sub(k.loadedAt) >= keptByNameReload
	}
	k.changes.ReadWhileListening(ctx, due, func(ctx context.Context) error { return k.Load(ctx, read) }, keptByNameRetry, func(err error) {
		log.WarnContext(ctx, what, "err", err)
	})
}

// Load reads every value with read, which says whether they are complete
// (every workload with a value among them), and keeps them but those
// announced while it read; it keeps nothing unless the replica listened
// under one connection throughout.
func (k *KeptByName[V]) Load(ctx context.Context, read func(context.Context) (map[WorkloadName]V, bool, error)) error {
	connection, live := k.changes.Listening()
	if !live {
		return nil
	}
	heard := &heardNames{names: map[WorkloadName]uint64{}}
	k.mu.Lock()
	k.heardWhileLoading = heard
	k.mu.Unlock()
	readAt := time.Now()
	byName, complete, err := read(ctx)

	k.mu.Lock()
	defer k.mu.Unlock()
	k.heardWhileLoading = nil
	if err != nil {
		return err
	}
	if now, live := k.changes.Listening(); !live || now != connection || heard.all {
		return nil
	}
	for n := range heard.names {
		delete(byName, n)
		k.announceLocked(n) // Refresh's read of it, if any, was of the values before
	}
	k.byName, k.unknown, k.complete = byName, heard.names, complete
	k.loaded, k.connection, k.loadedAt = true, connection, readAt
	k.loads++
	return nil
}

// Refresh reads again, in the background, the values notices named,
// until ctx ends: gathered for keptByNameGather, then read with readSome
// (at most keptByNameRefreshBatch at once; a workload it leaves out has no
// value) and kept as a view's read is (Keep: not if announced again
// meanwhile). A view of a workload whose value just changed then finds it
// kept instead of waiting for PostgreSQL: in the 1,000-workload run of
// 2026-12-07 05:25, the job page's slowest views each waited for one such
// read (up to 124 ms, on two cores beside a busy API server) after the
// load's ended runs were recorded. A failed read is logged as what; its
// workloads' next views read them.
func (k *KeptByName[V]) Refresh(ctx context.Context, readSome func(context.Context, []WorkloadName) (map[WorkloadName]V, error),
	log *slog.Logger, what string) {
	k.mu.Lock()
	k.refreshing = true
	k.mu.Unlock()
	defer func() {
		k.mu.Lock()
		defer k.mu.Unlock()
		k.refreshing = false
		clear(k.announced)
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-k.wake:
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(keptByNameGather):
		}
		for {
			looks := k.takeAnnounced(keptByNameRefreshBatch)
			if len(looks) == 0 {
				break
			}
			if err := k.refresh(ctx, looks, readSome); err != nil {
				log.WarnContext(ctx, what, "err", err)
				break
			}
		}
	}
}

// takeAnnounced takes up to max of the announced workloads whose values
// are not kept (a view may have read one since), each with what memory
// said of it then; none while the values may not be answered (every value
// is read again first).
func (k *KeptByName[V]) takeAnnounced(max int) map[WorkloadName]KeptLookup {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.answersLocked(time.Now()) {
		clear(k.announced)
		return nil
	}
	looks := make(map[WorkloadName]KeptLookup, min(max, len(k.announced)))
	for n := range k.announced {
		if len(looks) == max {
			break
		}
		delete(k.announced, n)
		if _, kept := k.byName[n]; kept {
			continue
		}
		looks[n] = k.lookLocked(n)
	}
	return looks
}

// refresh reads the values of the workloads looked up and keeps them.
func (k *KeptByName[V]) refresh(ctx context.Context, looks map[WorkloadName]KeptLookup,
	readSome func(context.Context, []WorkloadName) (map[WorkloadName]V, error)) error {
	names := make([]WorkloadName, 0, len(looks))
	for n := range looks {
		names = append(names, n)
	}
	values, err := readSome(ctx, names)
	if err != nil {
		return err
	}
	for n, v := range values {
		if look, ok := looks[n]; ok {
			k.Keep(look, n, v, true)
			delete(looks, n)
		}
	}
	var none V
	for n, look := range looks {
		k.Keep(look, n, none, false)
	}
	return nil
}
