// Package teams is the one implementation of a team's cluster objects:
// namespace (team label, Pod Security restricted), ClusterQueue in the
// cohort, LocalQueue, RoleBindings of its IdP groups and of the admin
// groups, a ResourceQuota on accelerators and an ingress NetworkPolicy. The
// portal's admin pages and the local stack both use it.
//
// The admission policies of the cluster select team namespaces by the
// naming.LabelTeam label, so the namespace label is the policy binding.
package teams

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/gantry-dev/gantry/internal/identity"
	"github.com/gantry-dev/gantry/internal/naming"
	"github.com/gantry-dev/gantry/internal/roster"
)

// Spec is what the cluster needs to know about a team: its record and,
// beside it, what only the cluster keeps (quotas) or what the portal or the
// local stack decides for every team (admin groups, portal namespace,
// identity prefixes).
type Spec struct {
	roster.Team
	// Quotas is the nominal quota per flavor; a flavor listed with an empty
	// list gets a zero quota line (so grants can raise it later), a flavor
	// not listed gets no line at all.
	Quotas map[string]corev1.ResourceList
	// BorrowCPUAndMemory lets the ClusterQueue borrow CPU and memory from
	// the cohort without limit; teams made in the portal start with zero
	// quota and get GPUs through quota requests.
	BorrowCPUAndMemory bool
	// AdminGroups are bound to naming.AdminRole in the team's namespace.
	AdminGroups []string
	// PortalNamespace is where the portal's pods (labelled naming.LabelPartOf=naming.PartOf)
	// run; the team's NetworkPolicy admits traffic from them. Empty admits
	// only the team's own namespace.
	PortalNamespace string
	// Identities prefix the IdP groups the RoleBindings bind, as the portal
	// impersonates them; the zero value is the default prefix.
	Identities identity.Prefixes
}

// Flavor is a Kueue ResourceFlavor (one per node pool) and the accelerator
// resources its nodes offer.
type Flavor struct {
	Name         string
	Accelerators []corev1.ResourceName
}

// Namespace is the team's namespace.
func (t Spec) Namespace() string { return naming.Namespace(t.Name) }

// ClusterQueue is the name of the team's ClusterQueue.
func (t Spec) ClusterQueue() string { return naming.ClusterQueue(t.Name) }

// IsAccelerator reports whether a resource is a GPU or GPU slice.
func IsAccelerator(name corev1.ResourceName) bool {
	return strings.HasPrefix(string(name), "nvidia.com/") || name == "amd.com/gpu"
}

// Objects are the team's cluster objects, in the order they are applied.
func Objects(t Spec, cohort string, flavors []Flavor) ([]runtime.Object, error) {
	for flavor := range t.Quotas {
		if !slices.ContainsFunc(flavors, func(f Flavor) bool { return f.Name == flavor }) {
			return nil, fmt.Errorf("team %s: quota for unknown pool %q", t.Name, flavor)
		}
	}
	ns := t.Namespace()
	labels := map[string]string{naming.LabelTeam: t.Name, naming.LabelPartOf: naming.PartOf}
	nsLabels := maps.Clone(labels)
	maps.Copy(nsLabels, map[string]string{
		"pod-security.kubernetes.io/enforce":         "restricted",
		"pod-security.kubernetes.io/enforce-version": "latest",
		"pod-security.kubernetes.io/warn":            "restricted",
		"pod-security.kubernetes.io/audit":           "restricted",
	})
	annotations := map[string]string{}
	if t.DisplayName != "" {
		annotations[naming.AnnotationDisplayName] = t.DisplayName
	}
	if t.CostCenter != "" {
		annotations[naming.AnnotationCostCenter] = t.CostCenter
	}
	cq := clusterQueue(t, cohort, flavors, labels)
	objs := []runtime.Object{
		&corev1.Namespace{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: nsLabels, Annotations: annotations},
		},
		cq,
		&kueue.LocalQueue{
			TypeMeta:   metav1.TypeMeta{APIVersion: kueue.GroupVersion.String(), Kind: "LocalQueue"},
			ObjectMeta: metav1.ObjectMeta{Name: naming.LocalQueue, Namespace: ns, Labels: labels},
			Spec:       kueue.LocalQueueSpec{ClusterQueue: kueue.ClusterQueueReference(t.ClusterQueue())},
		},
		ResourceQuota(cq, ns),
		networkPolicy(t, labels),
	}
	for _, rb := range []struct {
		name, role string
		groups     []string
	}{
		{naming.ResearcherBinding, naming.ResearcherRole, t.MemberGroups},
		{naming.TeamLeadBinding, naming.TeamLeadRole, t.LeadGroups},
		{naming.AdminBinding, naming.AdminRole, t.AdminGroups},
	} {
		if len(rb.groups) == 0 {
			continue
		}
		objs = append(objs, roleBinding(ns, rb.name, rb.role, t.Identities.Groups(rb.groups), labels))
	}
	return objs, nil
}

// networkPolicy denies ingress to every pod of the team namespace except
// from pods of the same namespace and the portal's pods (notebook and
// endpoint proxy), so no other team reaches a team's notebooks or endpoints.
func networkPolicy(t Spec, labels map[string]string) *networkingv1.NetworkPolicy {
	from := []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}}
	if t.PortalNamespace != "" {
		from = append(from, networkingv1.NetworkPolicyPeer{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: t.PortalNamespace}},
			PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{naming.LabelPartOf: naming.PartOf}},
		})
	}
	return &networkingv1.NetworkPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: naming.NetworkPolicy, Namespace: t.Namespace(), Labels: labels},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress:     []networkingv1.NetworkPolicyIngressRule{{From: from}},
		},
	}
}

// roleBinding binds groups, as the API server names them (prefixed), to role.
func roleBinding(ns, name, role string, groups []string, labels map[string]string) *rbacv1.RoleBinding {
	var subjects []rbacv1.Subject
	for _, g := range groups {
		subjects = append(subjects, rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: g})
	}
	return &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   subjects,
	}
}

// CoveredResources are every resource any flavor offers for Kueue quota
// (accelerators, cpu, memory), sorted.
func CoveredResources(flavors []Flavor) []corev1.ResourceName {
	set := map[corev1.ResourceName]bool{corev1.ResourceCPU: true, corev1.ResourceMemory: true}
	for _, f := range flavors {
		for _, r := range f.Accelerators {
			set[r] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// FlavorOrder is the order Kueue tries flavors in: CPU-only pools first, so
// a workload without accelerators never lands on a GPU pool, then the
// pools in the given order.
func FlavorOrder(flavors []Flavor) []Flavor {
	out := slices.Clone(flavors)
	slices.SortStableFunc(out, func(a, b Flavor) int {
		ag, bg := len(a.Accelerators) > 0, len(b.Accelerators) > 0
		switch {
		case ag == bg:
			return 0
		case !ag:
			return -1
		default:
			return 1
		}
	})
	return out
}

func clusterQueue(t Spec, cohort string, flavors []Flavor, labels map[string]string) *kueue.ClusterQueue {
	covered := CoveredResources(flavors)
	var fqs []kueue.FlavorQuotas
	for _, f := range FlavorOrder(flavors) {
		quota, ok := t.Quotas[f.Name]
		if !ok {
			continue
		}
		fq := kueue.FlavorQuotas{Name: kueue.ResourceFlavorReference(f.Name)}
		for _, r := range covered {
			nominal := quota[r]
			// A team may borrow up to its own nominal quota again.
			limit := nominal.DeepCopy()
			rq := kueue.ResourceQuota{Name: r, NominalQuota: nominal, BorrowingLimit: &limit}
			if t.BorrowCPUAndMemory && !IsAccelerator(r) {
				rq.BorrowingLimit = nil
			}
			fq.Resources = append(fq.Resources, rq)
		}
		fqs = append(fqs, fq)
	}
	cq := &kueue.ClusterQueue{
		TypeMeta:   metav1.TypeMeta{APIVersion: kueue.GroupVersion.String(), Kind: "ClusterQueue"},
		ObjectMeta: metav1.ObjectMeta{Name: t.ClusterQueue(), Labels: labels},
		Spec: kueue.ClusterQueueSpec{
			CohortName:        kueue.CohortReference(cohort),
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{naming.LabelTeam: t.Name}},
			Preemption: &kueue.ClusterQueuePreemption{
				ReclaimWithinCohort: kueue.PreemptionPolicyAny,
				WithinClusterQueue:  kueue.PreemptionPolicyLowerPriority,
			},
		},
	}
	if len(fqs) > 0 {
		cq.Spec.ResourceGroups = []kueue.ResourceGroup{{CoveredResources: covered, Flavors: fqs}}
	}
	return cq
}

// ResourceQuota is the namespace's hard cap on accelerator requests: the
// most the ClusterQueue can ever admit (nominal plus borrowing limit, summed
// over flavors). Kueue decides admission; the ResourceQuota only stops pods
// that bypass Kueue from taking more. Only accelerators are capped, so pods
// without GPU requests need not declare any.
func ResourceQuota(cq *kueue.ClusterQueue, namespace string) *corev1.ResourceQuota {
	hard := corev1.ResourceList{}
	for _, rg := range cq.Spec.ResourceGroups {
		for _, r := range rg.CoveredResources {
			if IsAccelerator(r) {
				hard[corev1.ResourceName("requests."+string(r))] = resource.MustParse("0")
			}
		}
		for _, f := range rg.Flavors {
			for _, r := range f.Resources {
				if !IsAccelerator(r.Name) {
					continue
				}
				key := corev1.ResourceName("requests." + string(r.Name))
				q := hard[key]
				q.Add(r.NominalQuota)
				if r.BorrowingLimit != nil {
					q.Add(*r.BorrowingLimit)
				}
				hard[key] = q
			}
		}
	}
	return &corev1.ResourceQuota{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ResourceQuota"},
		ObjectMeta: metav1.ObjectMeta{Name: naming.ResourceQuota, Namespace: namespace,
			Labels: map[string]string{naming.LabelTeam: cq.Labels[naming.LabelTeam], naming.LabelPartOf: naming.PartOf}},
		Spec: corev1.ResourceQuotaSpec{Hard: hard},
	}
}
