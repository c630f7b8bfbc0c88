package teams

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// FlavorCapacity reports what the nodes of a ResourceFlavor offer.
type FlavorCapacity func(rf *kueue.ResourceFlavor) (corev1.ResourceList, error)

// FlavorsOf derives the flavors a new team's ClusterQueue lists from the
// cluster's ResourceFlavors and the accelerators their nodes offer.
func FlavorsOf(rfs []*kueue.ResourceFlavor, capacity FlavorCapacity) ([]Flavor, error) {
	out := make([]Flavor, 0, len(rfs))
	for _, rf := range rfs {
		c, err := capacity(rf)
		if err != nil {
			return nil, fmt.Errorf("flavors: capacity of %s: %w", rf.Name, err)
		}
		f := Flavor{Name: rf.Name}
		for r := range c {
			if IsAccelerator(r) {
				f.Accelerators = append(f.Accelerators, r)
			}
		}
		slices.Sort(f.Accelerators)
		out = append(out, f)
	}
	return out, nil
}

// ZeroQuotas gives the team a zero quota line in every flavor, so grants
// can raise any of them later.
func ZeroQuotas(flavors []Flavor) map[string]corev1.ResourceList {
	out := make(map[string]corev1.ResourceList, len(flavors))
	for _, f := range flavors {
		out[f.Name] = corev1.ResourceList{}
	}
	return out
}
