package kube

import (
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"
)

// keyIndex files an informer's objects under values of theirs (a Workload
// under its owners, an event under the object it is about), as the
// informer's own indexer would, but each value's keys are a slice kept by
// an event handler. The indexer keeps a set, a map of its own, for every
// value: at 10,000 Workloads, each with an owner of its own, and tens of
// thousands of events about a few objects each, those maps were 14 of the
// caches' 58 MiB in BenchmarkSeededCaches.
//
// Being kept by a handler, it follows the informer's store a moment
// behind: an object just stored may not be filed yet, and a key just
// filed may name an object already deleted (objects skips it).
type keyIndex struct {
	values func(obj any) []string
	mu     sync.RWMutex
	keys   map[string][]objectKey
}

// objectKey names an object by its own strings, so that filing it
// allocates no key.
type objectKey struct{ namespace, name string }

func (k objectKey) String() string {
	if k.namespace == "" {
		return k.name
	}
	return k.namespace + "/" + k.name
}

func newKeyIndex(values func(obj any) []string) *keyIndex {
	return &keyIndex{values: values, keys: map[string][]objectKey{}}
}

// add files obj (or a deleted object's last state) under its values.
func (x *keyIndex) add(obj any) { x.move(nil, obj) }

// remove takes obj (or a deleted object's last state) out of the index.
func (x *keyIndex) remove(obj any) { x.move(obj, nil) }

// move refiles an object from the values of its old state to those of
// its new one; a nil state has none.
func (x *keyIndex) move(oldObj, newObj any) {
	oldObj, newObj = unwrapDeleted(oldObj), unwrapDeleted(newObj)
	named := newObj
	if named == nil {
		named = oldObj
	}
	m, err := meta.Accessor(named)
	if err != nil {
		return
	}
	key := objectKey{m.GetNamespace(), m.GetName()}
	var was, is []string
	if oldObj != nil {
		was = x.values(oldObj)
	}
	if newObj != nil {
		is = x.values(newObj)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, v := range was {
		if slices.Contains(is, v) {
			continue
		}
		keys := slices.DeleteFunc(x.keys[v], func(k objectKey) bool { return k == key })
		if len(keys) == 0 {
			delete(x.keys, v)
		} else {
			x.keys[v] = keys
		}
	}
	for _, v := range is {
		// An informer that lists again reports the objects it has as added.
		if keys := x.keys[v]; !slices.Contains(keys, key) {
			x.keys[v] = append(keys, key)
		}
	}
}

// handler keeps the index in step with an informer.
func (x *keyIndex) handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) { x.add(obj) }, UpdateFunc: x.move, DeleteFunc: x.remove}
}

// objects returns the objects of store filed under value that still are.
func (x *keyIndex) objects(store cache.Store, value string) []any {
	x.mu.RLock()
	keys := slices.Clone(x.keys[value])
	x.mu.RUnlock()
	out := make([]any, 0, len(keys))
	for _, k := range keys {
		// A key names one object for its life; its values (a Workload's
		// owners) may change before the index hears of it.
		if obj, ok, _ := store.GetByKey(k.String()); ok && slices.Contains(x.values(obj), value) {
			out = append(out, obj)
		}
	}
	return out
}
