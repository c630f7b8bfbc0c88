package kube

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// maxSharedMaps bounds each kind of shared map: the distinct requests and
// node selectors of a cluster are a handful of templates' worth, and a
// map past the bound is simply kept as it came (a cache of objects that
// come and go must not grow without end).
const maxSharedMaps = 4096

// sharedMaps gives the job cache's objects one copy of each distinct
// resource list and node selector. Ten thousand Workloads of a few
// templates carry ten thousand copies of the same few requests, pools and
// flavors; cached objects are read-only, so they can share them.
type sharedMaps struct {
	mu        sync.Mutex
	resources map[string]corev1.ResourceList
	strings   map[string]map[string]string
	flavors   map[string]map[corev1.ResourceName]kueue.ResourceFlavorReference
	// podSets are the distinct trimmed pod sets of Workloads, by their JSON.
	podSets map[string][]kueue.PodSet
}

func newSharedMaps() *sharedMaps {
	return &sharedMaps{resources: map[string]corev1.ResourceList{}, strings: map[string]map[string]string{},
		flavors: map[string]map[corev1.ResourceName]kueue.ResourceFlavorReference{}, podSets: map[string][]kueue.PodSet{}}
}

// share returns the one copy of m kept in kept under key (m itself the
// first time, or once kept is full).
func share[M ~map[K]V, K ~string, V any](mu *sync.Mutex, kept map[string]M, m M, value func(V) string) M {
	if len(m) == 0 {
		return m
	}
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(m)) {
		b.WriteString(string(k))
		b.WriteByte('=')
		b.WriteString(value(m[k]))
		b.WriteByte(0)
	}
	key := b.String()
	mu.Lock()
	defer mu.Unlock()
	if s, ok := kept[key]; ok {
		return s
	}
	if len(kept) < maxSharedMaps {
		kept[key] = m
	}
	return m
}

func (s *sharedMaps) resourceList(l corev1.ResourceList) corev1.ResourceList {
	return share(&s.mu, s.resources, l, func(q resource.Quantity) string { return q.String() })
}

func (s *sharedMaps) stringMap(m map[string]string) map[string]string {
	return share(&s.mu, s.strings, m, func(v string) string { return v })
}

func (s *sharedMaps) flavorMap(m map[corev1.ResourceName]kueue.ResourceFlavorReference) map[corev1.ResourceName]kueue.ResourceFlavorReference {
	return share(&s.mu, s.flavors, m, func(v kueue.ResourceFlavorReference) string { return string(v) })
}

// podSpec shares the node selector and each container's requests and limits.
func (s *sharedMaps) podSpec(p *corev1.PodSpec) {
	p.NodeSelector = s.stringMap(p.NodeSelector)
	for _, cs := range [][]corev1.Container{p.Containers, p.InitContainers} {
		for i := range cs {
			r := &cs[i].Resources
			r.Requests, r.Limits = s.resourceList(r.Requests), s.resourceList(r.Limits)
		}
	}
}

// object shares the maps of a trimmed Pod or Workload.
func (s *sharedMaps) object(obj any) {
	switch o := obj.(type) {
	case *corev1.Pod:
		s.podSpec(&o.Spec)
	case *kueue.Workload:
		for i := range o.Spec.PodSets {
			s.podSpec(&o.Spec.PodSets[i].Template.Spec)
		}
		o.Spec.PodSets = s.podSetList(o.Spec.PodSets)
		if a := o.Status.Admission; a != nil {
			for i := range a.PodSetAssignments {
				psa := &a.PodSetAssignments[i]
				psa.Flavors, psa.ResourceUsage = s.flavorMap(psa.Flavors), s.resourceList(psa.ResourceUsage)
			}
		}
	}
}

// podSetList returns the one copy kept of trimmed pod sets equal to ps. A
// pod set holds a whole pod template's struct (864 bytes before its
// containers), so ten thousand Workloads of a few templates kept 10 MiB of
// equal pod sets (BenchmarkSeededCaches); equal JSON is equal in every
// field the trim keeps.
func (s *sharedMaps) podSetList(ps []kueue.PodSet) []kueue.PodSet {
	if len(ps) == 0 {
		return ps
	}
	b, err := json.Marshal(ps)
	if err != nil {
		return ps
	}
	key := string(b)
	s.mu.Lock()
	defer s.mu.Unlock()
	if kept, ok := s.podSets[key]; ok {
		return kept
	}
	if len(s.podSets) < maxSharedMaps {
		// A copy of its own length: the decoder's array has room to spare.
		ps = slices.Clone(ps)
		s.podSets[key] = ps
	}
	return ps
}
