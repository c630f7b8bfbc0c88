package queue

import (
	corev1 "k8s.io/api/core/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// QuotaOf is the one reading of a ClusterQueue's quota: for every flavor
// and resource of its spec, in spec order, how much it has (Nominal,
// BorrowingLimit), how much workloads have reserved (Reserved, Kueue's
// status.flavorsReservation) and how much admitted workloads use (Used,
// status.flavorsUsage, with the Borrowed part of it).
func QuotaOf(cq *kueue.ClusterQueue) []FlavorQuota {
	usage := usageIndex(cq.Status.FlavorsUsage)
	reservation := usageIndex(cq.Status.FlavorsReservation)
	var out []FlavorQuota
	for _, rg := range cq.Spec.ResourceGroups {
		for _, fq := range rg.Flavors {
			for _, rq := range fq.Resources {
				key := flavorResource{flavor: string(fq.Name), resource: rq.Name}
				u, r := usage[key], reservation[key]
				out = append(out, FlavorQuota{
					Flavor:         string(fq.Name),
					Resource:       string(rq.Name),
					Nominal:        rq.NominalQuota.Value(),
					Used:           u.Total.Value(),
					Reserved:       r.Total.Value(),
					Borrowed:       u.Borrowed.Value(),
					BorrowingLimit: borrowingLimit(cq.Spec.CohortName, rq.BorrowingLimit),
				})
			}
		}
	}
	return out
}

// QuotaLineOf is QuotaOf's line for one flavor and resource; a line with
// zero figures when the ClusterQueue has no quota for it.
func QuotaLineOf(cq *kueue.ClusterQueue, flavor string, resource corev1.ResourceName) FlavorQuota {
	for _, l := range QuotaOf(cq) {
		if l.Flavor == flavor && l.Resource == string(resource) {
			return l
		}
	}
	return FlavorQuota{Flavor: flavor, Resource: string(resource)}
}
