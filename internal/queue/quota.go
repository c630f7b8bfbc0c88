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
	var out []FlavorQuota
	for _, rg := range cq.Spec.ResourceGroups {
		for _, fq := range rg.Flavors {
			for _, rq := range fq.Resources {
				out = append(out, quotaLine(cq, fq.Name, rq))
			}
		}
	}
	return out
}

// QuotaLineOf is QuotaOf's line for one flavor and resource; a line with
// zero figures when the ClusterQueue has no quota for it. It reads only
// that line: the cluster page asks it for every queue of a cohort.
func QuotaLineOf(cq *kueue.ClusterQueue, flavor string, resource corev1.ResourceName) FlavorQuota {
	for _, rg := range cq.Spec.ResourceGroups {
		for _, fq := range rg.Flavors {
			if string(fq.Name) != flavor {
				continue
			}
			for _, rq := range fq.Resources {
				if rq.Name == resource {
					return quotaLine(cq, fq.Name, rq)
				}
			}
		}
	}
	return FlavorQuota{Flavor: flavor, Resource: string(resource)}
}

func quotaLine(cq *kueue.ClusterQueue, flavor kueue.ResourceFlavorReference, rq kueue.ResourceQuota) FlavorQuota {
	u := usageOf(cq.Status.FlavorsUsage, flavor, rq.Name)
	r := usageOf(cq.Status.FlavorsReservation, flavor, rq.Name)
	return FlavorQuota{
		Flavor:         string(flavor),
		Resource:       string(rq.Name),
		Nominal:        rq.NominalQuota.Value(),
		Used:           u.Total.Value(),
		Reserved:       r.Total.Value(),
		Borrowed:       u.Borrowed.Value(),
		BorrowingLimit: borrowingLimit(cq.Spec.CohortName, rq.BorrowingLimit),
	}
}

// usageOf finds one flavor's resource in a status usage list (a few
// entries: a scan allocates nothing, unlike an index built per call).
func usageOf(usages []kueue.FlavorUsage, flavor kueue.ResourceFlavorReference, resource corev1.ResourceName) kueue.ResourceUsage {
	for _, fu := range usages {
		if fu.Name != flavor {
			continue
		}
		for _, ru := range fu.Resources {
			if ru.Name == resource {
				return ru
			}
		}
	}
	return kueue.ResourceUsage{}
}
