package teams

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

var testFlavors = []Flavor{
	{Name: "gpu", Accelerators: []corev1.ResourceName{"nvidia.com/gpu"}},
	{Name: "cpu"},
}

func TestObjects(t *testing.T) {
	team := Spec{Team: roster.Team{Name: "vision", CostCenter: "CC-1", MemberGroups: []string{"vision-researchers"}, LeadGroups: []string{"vision-leads"}},
		Quotas: map[string]corev1.ResourceList{"gpu": {"nvidia.com/gpu": resource.MustParse("4")}, "cpu": {"cpu": resource.MustParse("16")}}}
	objs, err := Objects(team, "gantry", testFlavors)
	require.NoError(t, err)

	ns := find[*corev1.Namespace](t, objs)
	assert.Equal(t, "team-vision", ns.Name)
	assert.Equal(t, "vision", ns.Labels[naming.LabelTeam], "admission policies select team namespaces by this label")
	assert.Equal(t, "restricted", ns.Labels["pod-security.kubernetes.io/enforce"])
	assert.Equal(t, "CC-1", ns.Annotations[naming.AnnotationCostCenter])

	cq := find[*kueue.ClusterQueue](t, objs)
	assert.Equal(t, kueue.CohortReference("gantry"), cq.Spec.CohortName)
	require.Len(t, cq.Spec.ResourceGroups, 1)
	assert.Equal(t, kueue.ResourceFlavorReference("cpu"), cq.Spec.ResourceGroups[0].Flavors[0].Name, "CPU-only flavors come first")

	rq := find[*corev1.ResourceQuota](t, objs)
	want := corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse("8")}
	if diff := cmp.Diff(want.Name("requests.nvidia.com/gpu", resource.DecimalSI).String(), rq.Spec.Hard.Name("requests.nvidia.com/gpu", resource.DecimalSI).String()); diff != "" {
		t.Errorf("GPU hard limit is nominal plus borrowing limit (-want +got):\n%s", diff)
	}
	assert.NotContains(t, rq.Spec.Hard, corev1.ResourceName("requests.cpu"), "only accelerators are capped")

	var bindings []string
	for _, o := range objs {
		if rb, ok := o.(*rbacv1.RoleBinding); ok {
			bindings = append(bindings, rb.RoleRef.Name+"="+rb.Subjects[0].Name)
		}
	}
	assert.Equal(t, []string{"gantry-researcher=oidc:vision-researchers", "gantry-team-lead=oidc:vision-leads"}, bindings,
		"RoleBindings bind the groups as the portal impersonates them: prefixed")
}

func TestRoleBindingsBindConfiguredGroupPrefix(t *testing.T) {
	team := Spec{Team: roster.Team{Name: "vision", MemberGroups: []string{"vision-researchers", "system:masters"}},
		Identities: identity.Prefixes{UserPrefix: "corp:", GroupPrefix: "corp-group:"}}
	objs, err := Objects(team, "gantry", testFlavors)
	require.NoError(t, err)
	rb := find[*rbacv1.RoleBinding](t, objs)
	assert.Equal(t, []rbacv1.Subject{
		{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "corp-group:vision-researchers"},
		{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "corp-group:system:masters"},
	}, rb.Subjects, "even a group spelled system: is bound only under the prefix")
}

func TestAdminsAndPortalReachOnlyTeamNamespaces(t *testing.T) {
	team := Spec{Team: roster.Team{Name: "vision", MemberGroups: []string{"vision-researchers"}}, AdminGroups: []string{"gantry-admins"}, PortalNamespace: "gantry-system"}
	objs, err := Objects(team, "gantry", testFlavors)
	require.NoError(t, err)

	admins := find[*rbacv1.RoleBinding](t, slices.DeleteFunc(slices.Clone(objs), func(o runtime.Object) bool {
		rb, ok := o.(*rbacv1.RoleBinding)
		return ok && rb.RoleRef.Name != naming.AdminRole
	}))
	assert.Equal(t, "team-vision", admins.Namespace, "admins are bound in the team namespace, not cluster-wide")
	assert.Equal(t, []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "oidc:gantry-admins"}}, admins.Subjects)

	np := find[*networkingv1.NetworkPolicy](t, objs)
	assert.Equal(t, "team-vision", np.Namespace)
	assert.Empty(t, np.Spec.PodSelector.MatchLabels, "every pod of the namespace")
	assert.Equal(t, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}, np.Spec.PolicyTypes)
	require.Len(t, np.Spec.Ingress, 1)
	want := []networkingv1.NetworkPolicyPeer{
		{PodSelector: &metav1.LabelSelector{}},
		{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "gantry-system"}},
			PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/part-of": "gantry"}}},
	}
	if diff := cmp.Diff(want, np.Spec.Ingress[0].From); diff != "" {
		t.Errorf("ingress from the namespace itself and the portal's pods only (-want +got):\n%s", diff)
	}
}

func TestBorrowing(t *testing.T) {
	cases := map[string]struct {
		borrowCPU bool
		wantCPU   string
	}{
		"limited to nominal":    {borrowCPU: false, wantCPU: "0"},
		"unlimited CPU and RAM": {borrowCPU: true, wantCPU: "unlimited"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			team := Spec{Team: roster.Team{Name: "x"}, Quotas: ZeroQuotas(testFlavors), BorrowCPUAndMemory: tc.borrowCPU}
			objs, err := Objects(team, "gantry", testFlavors)
			require.NoError(t, err)
			cq := find[*kueue.ClusterQueue](t, objs)
			got := map[string]string{}
			for _, f := range cq.Spec.ResourceGroups[0].Flavors {
				for _, r := range f.Resources {
					v := "unlimited"
					if r.BorrowingLimit != nil {
						v = r.BorrowingLimit.String()
					}
					got[string(f.Name)+"/"+string(r.Name)] = v
				}
			}
			assert.Equal(t, tc.wantCPU, got["gpu/cpu"])
			assert.Equal(t, "0", got["gpu/nvidia.com/gpu"], "GPUs are never borrowed without a grant")
		})
	}
}

func TestQuotaForUnknownFlavorIsRejected(t *testing.T) {
	_, err := Objects(Spec{Team: roster.Team{Name: "x"}, Quotas: map[string]corev1.ResourceList{"nope": {}}}, "gantry", testFlavors)
	assert.ErrorContains(t, err, `unknown pool "nope"`)
}

func find[T runtime.Object](t *testing.T, objs []runtime.Object) T {
	t.Helper()
	for _, o := range objs {
		if v, ok := o.(T); ok {
			return v
		}
	}
	var zero T
	t.Fatalf("no %T among the objects", zero)
	return zero
}
