package cost

import "sort"

// topOf returns copies of the first n entries of m in the order less
// gives (by name and entry), leaving out those skip names, picked in one
// pass over m: a month's jobs are thousands (16,700 a team, 50,000 for the
// cluster at 50,000 workloads), read again at each ended run, and sorting
// them all to show five was most of what a report cost. Never nil.
func topOf[T any](m map[string]*T, n int, skip func(*T) bool, less func(an string, a *T, bn string, b *T) bool) []T {
	type entry struct {
		name string
		v    *T
	}
	top := make([]entry, 0, max(0, min(n, len(m))))
	for name, v := range m {
		if skip != nil && skip(v) {
			continue
		}
		if len(top) == n && (n <= 0 || !less(name, v, top[n-1].name, top[n-1].v)) {
			continue
		}
		i := sort.Search(len(top), func(i int) bool { return less(name, v, top[i].name, top[i].v) })
		if len(top) < n {
			top = append(top, entry{})
		}
		copy(top[i+1:], top[i:len(top)-1])
		top[i] = entry{name, v}
	}
	out := make([]T, len(top))
	for i, e := range top {
		out[i] = *e.v
	}
	return out
}
