package web

import (
	"context"
	"sync"
	"time"

	"github.com/gantry-dev/gantry/internal/store"
)

// keptMaxAge bounds how long a kept figure is answered without reading it
// again, should a change notice be lost without the listening connection
// noticing (a network that drops packets instead of connections).
const keptMaxAge = 30 * time.Second

// keptFigures keeps small figures read from PostgreSQL (the nav's badge
// counts, the ledger's version, the prices) by key until a table under
// them changes, as the database announces to every replica
// (store.Changes): most views then make one round trip fewer per figure.
// Without a listening connection every view reads them.
type keptFigures[V any] struct {
	changes *store.Changes
	topics  []string

	mu    sync.Mutex
	byKey map[string]keptFigure[V]
}

type keptFigure[V any] struct {
	value  V
	marks  []store.ChangeMark
	readAt time.Time
}

func newKeptFigures[V any](changes *store.Changes, topics ...string) *keptFigures[V] {
	return &keptFigures[V]{changes: changes, topics: topics, byKey: map[string]keptFigure[V]{}}
}

// get returns key's figure, read by read unless one read since the last
// change of its topics is kept.
func (k *keptFigures[V]) get(ctx context.Context, key string, read func(context.Context) (V, error)) (V, error) {
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
	marks := make([]store.ChangeMark, len(k.topics))
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
	if len(k.byKey) >= maxCachedFigures {
		for key, e := range k.byKey {
			if now.Sub(e.readAt) >= keptMaxAge || !k.unchanged(e.marks) {
				delete(k.byKey, key)
			}
		}
	}
	if len(k.byKey) < maxCachedFigures {
		k.byKey[key] = keptFigure[V]{value: v, marks: marks, readAt: now}
	}
	return v, nil
}

func (k *keptFigures[V]) unchanged(marks []store.ChangeMark) bool {
	for i, t := range k.topics {
		if !k.changes.Unchanged(t, marks[i]) {
			return false
		}
	}
	return true
}

// keptCosts is a CostStore whose ledger version and prices, read by most
// team, cluster and job page views, are kept until they change.
type keptCosts struct {
	CostStore
	version *keptFigures[int64]
	prices  *keptFigures[[]store.GPUPrice]
}

func newKeptCosts(next CostStore, changes *store.Changes) *keptCosts {
	return &keptCosts{CostStore: next, version: newKeptFigures[int64](changes, store.TopicLedger),
		prices: newKeptFigures[[]store.GPUPrice](changes, store.TopicPrices)}
}

func (k *keptCosts) LedgerVersion(ctx context.Context) (int64, error) {
	return k.version.get(ctx, "", k.CostStore.LedgerVersion)
}

// AllPrices is shared by every caller; they must not change what it returns.
func (k *keptCosts) AllPrices(ctx context.Context) ([]store.GPUPrice, error) {
	return k.prices.get(ctx, "", k.CostStore.AllPrices)
}
