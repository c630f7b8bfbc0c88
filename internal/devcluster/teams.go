package devcluster

import (
	"context"
	"fmt"
	"os"
	"slices"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	kueueclient "sigs.k8s.io/kueue/client-go/clientset/versioned"
	"sigs.k8s.io/yaml"
)

// Labels and names the cluster objects of a team carry.
const (
	// TeamLabel names the team on its namespace and ClusterQueue.
	TeamLabel = "gantry.dev/team"
	// LocalQueueName is the LocalQueue in every team namespace.
	LocalQueueName = "default"
	// ResearcherRole and TeamLeadRole are the ClusterRoles (deploy/local/cluster/rbac.yaml)
	// a team's IdP groups are bound to in its namespace.
	ResearcherRole = "gantry-researcher"
	TeamLeadRole   = "gantry-team-lead"
)

// Team is one team of deploy/local/teams.yaml.
type Team struct {
	Name         string   `json:"name"`
	DisplayName  string   `json:"displayName,omitempty"`
	CostCenter   string   `json:"costCenter,omitempty"`
	MemberGroups []string `json:"memberGroups,omitempty"`
	LeadGroups   []string `json:"leadGroups,omitempty"`
	// Quotas is the nominal quota per ResourceFlavor (= pool name).
	Quotas map[string]corev1.ResourceList `json:"quotas,omitempty"`
}

// Teams is the content of teams.yaml.
type Teams struct {
	// Cohort is the Kueue cohort every team's ClusterQueue joins.
	Cohort string `json:"cohort"`
	Teams  []Team `json:"teams"`
}

// LoadTeams reads a teams file.
func LoadTeams(path string) (Teams, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Teams{}, fmt.Errorf("read teams: %w", err)
	}
	var t Teams
	if err := yaml.UnmarshalStrict(b, &t); err != nil {
		return Teams{}, fmt.Errorf("parse %s: %w", path, err)
	}
	if t.Cohort == "" {
		return Teams{}, fmt.Errorf("parse %s: cohort is required", path)
	}
	return t, nil
}

// Namespace is the team's namespace.
func (t Team) Namespace() string { return "team-" + t.Name }

// ClusterQueue is the name of the team's ClusterQueue.
func (t Team) ClusterQueue() string { return "team-" + t.Name }

// Objects are the cluster objects of a team: namespace (Pod Security
// restricted), ClusterQueue in the cohort with borrowing and preemption,
// LocalQueue and the RoleBindings of its IdP groups.
func (t Team) Objects(cohort string, pools []Pool) ([]runtime.Object, error) {
	for flavor := range t.Quotas {
		if !slices.ContainsFunc(pools, func(p Pool) bool { return p.Name == flavor }) {
			return nil, fmt.Errorf("team %s: quota for unknown pool %q", t.Name, flavor)
		}
	}
	ns := t.Namespace()
	labels := map[string]string{TeamLabel: t.Name, "app.kubernetes.io/part-of": "gantry"}
	nsLabels := map[string]string{
		TeamLabel:                                    t.Name,
		"app.kubernetes.io/part-of":                  "gantry",
		"pod-security.kubernetes.io/enforce":         "restricted",
		"pod-security.kubernetes.io/enforce-version": "latest",
		"pod-security.kubernetes.io/warn":            "restricted",
		"pod-security.kubernetes.io/audit":           "restricted",
	}
	annotations := map[string]string{}
	if t.DisplayName != "" {
		annotations["gantry.dev/display-name"] = t.DisplayName
	}
	if t.CostCenter != "" {
		annotations["gantry.dev/cost-center"] = t.CostCenter
	}
	objs := []runtime.Object{
		&corev1.Namespace{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: nsLabels, Annotations: annotations},
		},
		t.clusterQueue(cohort, pools, labels),
		&kueue.LocalQueue{
			TypeMeta:   metav1.TypeMeta{APIVersion: kueue.GroupVersion.String(), Kind: "LocalQueue"},
			ObjectMeta: metav1.ObjectMeta{Name: LocalQueueName, Namespace: ns, Labels: labels},
			Spec:       kueue.LocalQueueSpec{ClusterQueue: kueue.ClusterQueueReference(t.ClusterQueue())},
		},
	}
	for _, rb := range []struct {
		name, role string
		groups     []string
	}{
		{"gantry-researchers", ResearcherRole, t.MemberGroups},
		{"gantry-team-leads", TeamLeadRole, t.LeadGroups},
	} {
		if len(rb.groups) == 0 {
			continue
		}
		var subjects []rbacv1.Subject
		for _, g := range rb.groups {
			subjects = append(subjects, rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: g})
		}
		objs = append(objs, &rbacv1.RoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: rb.name, Namespace: ns, Labels: labels},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: rb.role},
			Subjects:   subjects,
		})
	}
	return objs, nil
}

// flavorOrder is the order Kueue tries flavors in: CPU-only pools first, so
// a workload without accelerators never lands on a GPU pool, then the pools
// in file order.
func flavorOrder(pools []Pool) []Pool {
	out := slices.Clone(pools)
	slices.SortStableFunc(out, func(a, b Pool) int {
		ag, bg := len(a.GPUResources()) > 0, len(b.GPUResources()) > 0
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

func (t Team) clusterQueue(cohort string, pools []Pool, labels map[string]string) *kueue.ClusterQueue {
	covered := coveredResources(pools)
	var flavors []kueue.FlavorQuotas
	for _, p := range flavorOrder(pools) {
		quota, ok := t.Quotas[p.Name]
		if !ok {
			continue
		}
		fq := kueue.FlavorQuotas{Name: kueue.ResourceFlavorReference(p.Name)}
		for _, r := range covered {
			nominal := quota[r]
			// A team may borrow up to its own nominal quota again.
			limit := nominal.DeepCopy()
			fq.Resources = append(fq.Resources, kueue.ResourceQuota{Name: r, NominalQuota: nominal, BorrowingLimit: &limit})
		}
		flavors = append(flavors, fq)
	}
	cq := &kueue.ClusterQueue{
		TypeMeta:   metav1.TypeMeta{APIVersion: kueue.GroupVersion.String(), Kind: "ClusterQueue"},
		ObjectMeta: metav1.ObjectMeta{Name: t.ClusterQueue(), Labels: labels},
		Spec: kueue.ClusterQueueSpec{
			CohortName:        kueue.CohortReference(cohort),
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{TeamLabel: t.Name}},
			Preemption: &kueue.ClusterQueuePreemption{
				ReclaimWithinCohort: kueue.PreemptionPolicyAny,
				WithinClusterQueue:  kueue.PreemptionPolicyLowerPriority,
			},
		},
	}
	if len(flavors) > 0 {
		cq.Spec.ResourceGroups = []kueue.ResourceGroup{{CoveredResources: covered, Flavors: flavors}}
	}
	return cq
}

// ApplyTeam creates or updates a team's cluster objects.
func ApplyTeam(ctx context.Context, cfg *rest.Config, cohort string, t Team, pools []Pool) error {
	objs, err := t.Objects(cohort, pools)
	if err != nil {
		return err
	}
	a, err := newApplier(cfg)
	if err != nil {
		return err
	}
	if err := a.apply(ctx, objs...); err != nil {
		return fmt.Errorf("apply team %s: %w", t.Name, err)
	}
	return nil
}

// DeleteTeam deletes a team's namespace and ClusterQueue.
func DeleteTeam(ctx context.Context, cfg *rest.Config, t Team) error {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("delete team %s: %w", t.Name, err)
	}
	kq, err := kueueclient.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("delete team %s: %w", t.Name, err)
	}
	if err := kube.CoreV1().Namespaces().Delete(ctx, t.Namespace(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete namespace %s: %w", t.Namespace(), err)
	}
	if err := kq.KueueV1beta2().ClusterQueues().Delete(ctx, t.ClusterQueue(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete ClusterQueue %s: %w", t.ClusterQueue(), err)
	}
	return nil
}
