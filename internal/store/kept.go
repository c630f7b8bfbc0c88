package store

import (
	"context"
	"sync"
	"time"

	"github.com/gantry-dev/gantry/internal/servertiming"
)

// maxKeptFigures bounds the figures one Kept holds (one per user or team
// at most): past it, figures read too long ago or changed since are
// dropped, and new ones are not kept until there is room.
const maxKeptFigures = 4096

// keptMaxAge bounds how long a kept figure is answered without reading it
// again, should a change notice be lost without the listening connection
// noticing (a network that drops packets instead of connections).
const keptMaxAge = 30 * time.Second

// Kept keeps small figures read from PostgreSQL (the nav's badge
// counts, the ledger's version, the prices, the idle policies) by key
// until a table under them changes, as the database announces to every
// replica (Changes): most views then make one round trip fewer per figure.
// Without a listening connection every view reads them.
type Kept[V any] struct {
	changes *Changes
	topics  []string
	// told is set for figures whose writers through this process tell
	// changes themselves (Changes.Told): they are kept while this
	// process writes other tables.
	told bool
	// maxAge is keptMaxAge (shorter in tests).
	maxAge time.Duration

	mu    sync.Mutex
	byKey map[string]keptFigure[V]
}

type keptFigure[V any] struct {
	value  V
	marks  []ChangeMark
	readAt time.Time
	// refreshing is set while the figure is read again after a view.
	refreshing bool
}

// NewKept keeps figures until a change of one of topics.
func NewKept[V any](changes *Changes, topics ...string) *Kept[V] {
	return &Kept[V]{changes: changes, topics: topics, maxAge: keptMaxAge, byKey: map[string]keptFigure[V]{}}
}

// NewToldKept keeps figures until a change of one of topics, which this
// process's writers of topics' tables tell changes of (Changes.Told) as
// soon as they commit, and other processes' through the database's
// notices. Unlike NewKept's, its figures outlast this process's writes of
// other tables: a portal launching 50 jobs a second is always writing,
// and would never keep the token, team, template and allowlist every
// launch reads.
func NewToldKept[V any](changes *Changes, topics ...string) *Kept[V] {
	k := NewKept[V](changes, topics...)
	k.told = true
	return k
}

// Get returns key's figure, read by read unless one read since the last
// change of its topics is kept. A kept figure in the last quarter of its
// maximum age is answered, and read again after the view (read then runs
// on its own, with ctx's values but not its end), so a view that finds
// its figure kept never waits on the database for it.
func (k *Kept[V]) Get(ctx context.Context, key string, read func(context.Context) (V, error)) (V, error) {
	if k == nil || k.changes == nil {
		return read(ctx)
	}
	now := time.Now()
	k.mu.Lock()
	e, ok := k.byKey[key]
	fresh := ok && now.Sub(e.readAt) < k.maxAge && k.unchanged(e.marks)
	refresh := fresh && !e.refreshing && now.Sub(e.readAt) >= k.maxAge*3/4
	if refresh {
		e.refreshing = true
		k.byKey[key] = e
	}
	k.mu.Unlock()
	if refresh {
		go func() {
			ctx, cancel := context.WithTimeout(servertiming.Detach(ctx), keptRefreshTimeout)
			defer cancel()
			_, _ = k.readAndKeep(ctx, key, read)
		}()
	}
	if fresh {
		return e.value, nil
	}
	return k.readAndKeep(ctx, key, read)
}

// keptRefreshTimeout bounds the read of a figure again after a view.
const keptRefreshTimeout = 10 * time.Second

// readAndKeep reads key's figure and keeps it (a figure being read again
// that cannot be kept stays as it was, to be read again by a later view).
func (k *Kept[V]) readAndKeep(ctx context.Context, key string, read func(context.Context) (V, error)) (V, error) {
	// The marks are taken before the read: a change committed while it
	// runs moves them, so its figure is read again next time.
	readAt := time.Now()
	marks := make([]ChangeMark, len(k.topics))
	live := true
	for i, t := range k.topics {
		m, ok := k.mark(t)
		marks[i], live = m, live && ok
	}
	v, err := read(ctx)
	k.mu.Lock()
	defer k.mu.Unlock()
	if err != nil || !live {
		if e, ok := k.byKey[key]; ok && e.refreshing {
			e.refreshing = false
			k.byKey[key] = e
		}
		return v, err
	}
	if len(k.byKey) >= maxKeptFigures {
		for key, e := range k.byKey {
			if readAt.Sub(e.readAt) >= k.maxAge || !k.unchanged(e.marks) {
				delete(k.byKey, key)
			}
		}
	}
	if _, ok := k.byKey[key]; ok || len(k.byKey) < maxKeptFigures {
		k.byKey[key] = keptFigure[V]{value: v, marks: marks, readAt: readAt}
	}
	return v, nil
}

func (k *Kept[V]) unchanged(marks []ChangeMark) bool {
	for i, t := range k.topics {
		if now, live := k.mark(t); !live || now != marks[i] {
			return false
		}
	}
	return true
}

// mark is topic's state now (Changes.Mark, or Changes.toldMark for a
// NewToldKept).
func (k *Kept[V]) mark(topic string) (ChangeMark, bool) {
	if k.told {
		return k.changes.toldMark(topic)
	}
	return k.changes.Mark(topic)
}
