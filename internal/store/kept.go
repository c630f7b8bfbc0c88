package store

import (
	"context"
	"sync"
	"time"
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

	mu    sync.Mutex
	byKey map[string]keptFigure[V]
}

type keptFigure[V any] struct {
	value  V
	marks  []ChangeMark
	readAt time.Time
}

// NewKept keeps figures until a change of one of topics.
func NewKept[V any](changes *Changes, topics ...string) *Kept[V] {
	return &Kept[V]{changes: changes, topics: topics, byKey: map[string]keptFigure[V]{}}
}

// Get returns key's figure, read by read unless one read since the last
// change of its topics is kept.
func (k *Kept[V]) Get(ctx context.Context, key string, read func(context.Context) (V, error)) (V, error) {
	if k == nil || k.changes == nil {
		return read(ctx)
	}
	now := time.Now()
	k.mu.Lock()
	e, ok := k.byKey[key]
	k.mu.Unlock()
	if ok && now.Sub(e.readAt) < keptMaxAge && k.unchanged(e.marks) {
		return e.value, nil
	}
	// The marks are taken before the read: a change committed while it
	// runs moves them, so its figure is read again next time.
	marks := make([]ChangeMark, len(k.topics))
	live := true
	for i, t := range k.topics {
		m, ok := k.changes.Mark(t)
		marks[i], live = m, live && ok
	}
	v, err := read(ctx)
	if err != nil || !live {
		return v, err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.byKey) >= maxKeptFigures {
		for key, e := range k.byKey {
			if now.Sub(e.readAt) >= keptMaxAge || !k.unchanged(e.marks) {
				delete(k.byKey, key)
			}
		}
	}
	if len(k.byKey) < maxKeptFigures {
		k.byKey[key] = keptFigure[V]{value: v, marks: marks, readAt: now}
	}
	return v, nil
}

func (k *Kept[V]) unchanged(marks []ChangeMark) bool {
	for i, t := range k.topics {
		if !k.changes.Unchanged(t, marks[i]) {
			return false
		}
	}
	return true
}
