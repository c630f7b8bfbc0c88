package devcluster

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/gantry-dev/gantry/internal/naming"
	"github.com/gantry-dev/gantry/internal/roster"
)

func repoLayout(t *testing.T) Layout {
	t.Helper()
	wd, err := os.Getwd()
	require.NoError(t, err)
	l, err := FindLayout(wd)
	require.NoError(t, err)
	return l
}

func TestDeployedPoolsAndTeamsAreConsistent(t *testing.T) {
	l := repoLayout(t)
	pools, err := LoadPools(l.Deploy("local", "pools.yaml"))
	require.NoError(t, err)
	teams, err := LoadTeams(l.Deploy("local", "teams.yaml"))
	require.NoError(t, err)

	byName := map[string]Pool{}
	for _, p := range pools {
		byName[p.Name] = p
	}
	for _, name := range []string{"h100-sxm-ib-training", "l40s-pcie-inference", "a100-mig-shared", "cpu-general"} {
		assert.Contains(t, byName, name)
	}
	assert.Equal(t, map[corev1.ResourceName]string{"nvidia.com/gpu": "8"}, byName["h100-sxm-ib-training"].GPUResources())
	assert.Equal(t, map[corev1.ResourceName]string{"nvidia.com/mig-1g.10gb": "7", "nvidia.com/mig-3g.40gb": "2"},
		byName["a100-mig-shared"].GPUResources())
	for _, p := range pools {
		for _, key := range []string{"gantry.dev/accelerator", "gantry.dev/topology", "gantry.dev/fabric", "gantry.dev/workload", "gantry.dev/sharing"} {
			assert.NotEmpty(t, p.Labels[key], "pool %s label %s", p.Name, key)
		}
	}

	assert.Equal(t, "gantry", teams.Cohort)
	var names []string
	for _, team := range teams.Teams {
		names = append(names, team.Name)
		_, err := team.Objects(teams.Cohort, pools)
		assert.NoError(t, err, "team %s", team.Name)
	}
	assert.Equal(t, []string{"vision", "nlp", "platform"}, names)
}

func TestLoadPoolsRejectsBadFiles(t *testing.T) {
	cases := map[string]string{
		"unknown field":     "pools:\n- name: a\n  nodes: 1\n  colour: red\n  capacity: {cpu: \"1\"}\n",
		"duplicate name":    "pools:\n- name: a\n  nodes: 1\n  capacity: {cpu: \"1\"}\n- name: a\n  nodes: 1\n  capacity: {cpu: \"1\"}\n",
		"bad quantity":      "pools:\n- name: a\n  nodes: 1\n  capacity: {cpu: lots}\n",
		"missing pool name": "pools:\n- nodes: 1\n  capacity: {cpu: \"1\"}\n",
	}
	for name, content := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "pools.yaml")
			require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
			_, err := LoadPools(path)
			assert.Error(t, err)
		})
	}
}

func TestTeamClusterQueue(t *testing.T) {
	pools := []Pool{
		{Name: "gpu", Taints: []corev1.Taint{{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}},
			Capacity: map[corev1.ResourceName]string{"nvidia.com/gpu": "8", "cpu": "64"}},
		{Name: "cpu", Capacity: map[corev1.ResourceName]string{"cpu": "64"}},
	}
	team := Team{roster.Entry{Team: roster.Team{Name: "vision", MemberGroups: []string{"vision-researchers"}, LeadGroups: []string{"vision-leads"}},
		Quotas: map[string]corev1.ResourceList{
			"gpu": {"nvidia.com/gpu": resource.MustParse("4"), "cpu": resource.MustParse("32")},
			"cpu": {"cpu": resource.MustParse("16")},
		}}}
	objs, err := team.Objects("gantry", pools)
	require.NoError(t, err)
	cq := find[*kueue.ClusterQueue](t, objs)

	assert.Equal(t, "team-vision", cq.Name)
	assert.Equal(t, "vision", cq.Labels[naming.LabelTeam])
	assert.Equal(t, kueue.CohortReference("gantry"), cq.Spec.CohortName)
	assert.Equal(t, kueue.PreemptionPolicyAny, cq.Spec.Preemption.ReclaimWithinCohort)
	assert.Equal(t, kueue.PreemptionPolicyLowerPriority, cq.Spec.Preemption.WithinClusterQueue)
	require.Len(t, cq.Spec.ResourceGroups, 1)
	rg := cq.Spec.ResourceGroups[0]
	assert.Equal(t, []corev1.ResourceName{"cpu", "memory", "nvidia.com/gpu"}, rg.CoveredResources)

	type quotaRow struct{ Flavor, Resource, Nominal, Borrow string }
	var got []quotaRow
	for _, f := range rg.Flavors {
		for _, r := range f.Resources {
			got = append(got, quotaRow{string(f.Name), string(r.Name), r.NominalQuota.String(), r.BorrowingLimit.String()})
		}
	}
	// CPU-only pools come first so CPU work never takes a GPU flavor; every
	// flavor lists every covered resource; borrowing up to nominal.
	want := []quotaRow{
		{"cpu", "cpu", "16", "16"}, {"cpu", "memory", "0", "0"}, {"cpu", "nvidia.com/gpu", "0", "0"},
		{"gpu", "cpu", "32", "32"}, {"gpu", "memory", "0", "0"}, {"gpu", "nvidia.com/gpu", "4", "4"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("quotas (-want +got):\n%s", diff)
	}

	ns := find[*corev1.Namespace](t, objs)
	assert.Equal(t, "restricted", ns.Labels["pod-security.kubernetes.io/enforce"])
	assert.Equal(t, "vision", ns.Labels[naming.LabelTeam])
}

func TestTeamWithQuotaForUnknownPoolIsRejected(t *testing.T) {
	team := Team{roster.Entry{Team: roster.Team{Name: "x"}, Quotas: map[string]corev1.ResourceList{"nope": {"cpu": resource.MustParse("1")}}}}
	_, err := team.Objects("gantry", []Pool{{Name: "cpu"}})
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
	t.Fatalf("no %T among %d objects", zero, len(objs))
	return zero
}

func TestKueueWebhookConfigurationsPointAtLoopback(t *testing.T) {
	manifest := `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: mutating-webhook-configuration
webhooks:
- name: mjob.kb.io
  clientConfig:
    service: {name: webhook-service, namespace: system, path: /mutate-batch-v1-job}
  rules: [{apiGroups: [batch], apiVersions: [v1], operations: [CREATE], resources: [jobs]}]
- name: mpod.kb.io
  clientConfig:
    service: {name: webhook-service, namespace: system, path: /mutate--v1-pod}
  rules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
- name: mrayjob.kb.io
  clientConfig:
    service: {name: webhook-service, namespace: system, path: /mutate-ray-io-v1-rayjob}
  rules: [{apiGroups: [ray.io], apiVersions: [v1], operations: [CREATE], resources: [rayjobs]}]
`
	path := filepath.Join(t.TempDir(), "manifests.yaml")
	require.NoError(t, os.WriteFile(path, []byte(manifest), 0o644))
	objs, err := kueueWebhookConfigurations(path, []byte("CA"))
	require.NoError(t, err)
	require.Len(t, objs, 1)
	assert.Equal(t, "kueue-mutating-webhook-configuration", objs[0].GetName())
	hooks := objs[0].Object["webhooks"].([]any)
	require.Len(t, hooks, 2, "ray webhook dropped")
	job, pod := hooks[0].(map[string]any), hooks[1].(map[string]any)
	assert.Equal(t, map[string]any{"url": "https://127.0.0.1:9443/mutate-batch-v1-job", "caBundle": "Q0E="}, job["clientConfig"])
	assert.Nil(t, job["namespaceSelector"])
	assert.NotNil(t, pod["namespaceSelector"], "pods in kube-system and kueue-system are left alone")
}
