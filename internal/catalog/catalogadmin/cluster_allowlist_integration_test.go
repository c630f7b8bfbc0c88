package catalogadmin_test

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	appsv1client "k8s.io/client-go/kubernetes/typed/apps/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/gantry-dev/gantry/internal/catalog/catalogadmin"
	"github.com/gantry-dev/gantry/internal/config"
	"github.com/gantry-dev/gantry/internal/devcluster/stacktest"
	"github.com/gantry-dev/gantry/internal/naming"
	"github.com/gantry-dev/gantry/internal/policy"
)

const (
	systemNamespace = "gantry-system"
	teamNamespace   = "team-vision"
)

var defaultRegistries = strings.Split(config.DefaultImageRegistries, ",")

// clusterAdmin is an Admin whose allowlist also goes to the local stack's
// ConfigMap; the default list is written back when the test ends, since
// every test on the stack shares that ConfigMap.
func clusterAdmin(t *testing.T) (*catalogadmin.Admin, kubernetes.Interface) {
	t.Helper()
	env := stacktest.Stack(t)
	admin, db := newAdmin(t)
	_, err := db.SeedImageAllowlist(context.Background(), defaultRegistries, "test")
	require.NoError(t, err)
	writer := catalogadmin.ConfigMapAllowlist{Client: env.Kube, Namespace: systemNamespace}
	admin.Cluster = writer
	t.Cleanup(func() {
		require.NoError(t, writer.Apply(context.Background(), defaultRegistries), "restore the default allowlist")
	})
	return admin, env.Kube
}

// dryRunJob creates a compliant Job with image as the cluster admin would
// with kubectl, without keeping it.
func dryRunJob(ctx context.Context, kube kubernetes.Interface, image string) error {
	job := stacktest.CompliantJob("vision", "allowlist-check", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")})
	job.Spec.Template.Spec.Containers[0].Image = image
	_, err := kube.BatchV1().Jobs(teamNamespace).Create(ctx, job, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	return err
}

func TestRegistryAnAdminAddsIsAllowedByTheClusterAndRemovedIsRefused(t *testing.T) {
	admin, kube := clusterAdmin(t)
	ctx := context.Background()
	const image = "ghcr.io/acme/train:1.0"
	require.Error(t, dryRunJob(ctx, kube, image), "off the default allowlist")

	_, err := admin.SetAllowlist(ctx, erin, strings.Join(append(defaultRegistries, "ghcr.io/acme"), "\n"))
	require.NoError(t, err)
	cm, err := kube.CoreV1().ConfigMaps(systemNamespace).Get(ctx, naming.AllowlistConfigMap, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "nvcr.io\nquay.io/jupyter\ndocker.io/vllm\nghcr.io/acme", cm.Data[naming.AllowlistKey])
	assert.True(t, managedBy(cm, "gantry"), "written by server-side apply as field manager gantry: %v", cm.ManagedFields)
	require.Eventually(t, func() bool { return dryRunJob(ctx, kube, image) == nil },
		30*time.Second, 200*time.Millisecond, "a Job from the added registry is admitted")

	_, err = admin.SetAllowlist(ctx, erin, strings.Join(defaultRegistries, "\n"))
	require.NoError(t, err)
	var last error
	require.Eventually(t, func() bool {
		last = dryRunJob(ctx, kube, image)
		return last != nil
	}, 30*time.Second, 200*time.Millisecond, "a Job from the removed registry is refused")
	assert.Contains(t, last.Error(), "Images must come from an allowed registry (nvcr.io/, quay.io/jupyter/, docker.io/vllm/) "+
		"and be pinned to a version tag or digest, not latest: ghcr.io/acme/train:1.0")
}

// TestClusterAndPortalJudgeImagesAlike runs the same images through
// internal/policy and the admission policy with the default allowlist.
func TestClusterAndPortalJudgeImagesAlike(t *testing.T) {
	_, kube := clusterAdmin(t)
	ctx := context.Background()
	rules := policy.Rules{Registries: defaultRegistries}
	digest := "@sha256:" + strings.Repeat("ab", 32)
	images := []string{
		"nvcr.io/nvidia/pytorch:24.12-py3",
		"nvcr.io/nvidia/pytorch" + digest,
		"nvcr.io/nvidia/pytorch:24.12" + digest,
		"nvcr.io/nvidia/pytorch:latest",
		"nvcr.io/nvidia/pytorch",
		"docker.io/vllm:1.0",
		"docker.io/vllm/vllm-openai:v0.6.4",
		"docker.io/vllmx/evil:1",
		"docker.io/library/busybox:1.37",
		"quay.io/jupyter/scipy-notebook:2024-10-07",
		"quay.io/jupyterhub/evil:1",
		"evil.example/nvcr.io/x:1",
		"nvcr.io.evil.example/x:1",
		"nvcr.io:1",
		"pytorch:2.4",
	}
	for _, image := range images {
		t.Run(image, func(t *testing.T) {
			portal := rules.CheckImage(image)
			err := dryRunJob(ctx, kube, image)
			assert.Equal(t, portal == "", err == nil, "portal says %q, cluster says %v", portal, err)
		})
	}
}

func managedBy(cm *corev1.ConfigMap, manager string) bool {
	for _, f := range cm.ManagedFields {
		if f.Manager == manager && f.Operation == metav1.ManagedFieldsOperationApply {
			return true
		}
	}
	return false
}

// TestMissingAllowlistFailsClosed binds a copy of the image policy to a
// namespace of its own with a ConfigMap that does not exist: every workload
// there is refused, even one whose image is on the default list.
func TestMissingAllowlistFailsClosed(t *testing.T) {
	env := stacktest.Stack(t)
	ctx := context.Background()
	ns := env.Namespace(t, "allowlist-missing", nil)
	binding := bindImagePolicyCopy(t, env, ns, "no-such-allowlist")
	require.Equal(t, admissionv1.DenyAction, *binding.Spec.ParamRef.ParameterNotFoundAction)

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns}, Spec: stacktest.RestrictedPodSpec(nil)}
	var last error
	require.Eventually(t, func() bool {
		_, last = env.Kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return last != nil
	}, 30*time.Second, 200*time.Millisecond, "a pod is refused while the allowlist ConfigMap is missing")
	assert.Contains(t, last.Error(), "no params found")
}

// TestWorkloadWhoseImageLeftTheAllowlistCanStillBeStopped binds a copy of
// the image policy to a namespace of its own with an allowlist of its own.
// A StatefulSet made while its registry was allowed can still be scaled to
// zero (a stop, the idle reclaim's too) and annotated after the registry
// leaves the list, since such an update brings in no image; changing its
// image is judged against today's list and refused.
func TestWorkloadWhoseImageLeftTheAllowlistCanStillBeStopped(t *testing.T) {
	env := stacktest.Stack(t)
	ctx := context.Background()
	ns := env.Namespace(t, "allowlist-update", nil)
	allowlist := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "allowlist", Namespace: ns},
		Data: map[string]string{naming.AllowlistKey: "nvcr.io\nghcr.io/acme"}}
	_, err := env.Kube.CoreV1().ConfigMaps(ns).Create(ctx, allowlist, metav1.CreateOptions{})
	require.NoError(t, err)
	bindImagePolicyCopy(t, env, ns, allowlist.Name)

	statefulSet := func(name, image string) *appsv1.StatefulSet {
		spec := stacktest.RestrictedPodSpec(nil)
		spec.RestartPolicy = corev1.RestartPolicyAlways
		spec.Containers[0].Image = image
		labels := map[string]string{"app": name}
		return &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: appsv1.StatefulSetSpec{
				Replicas: ptr.To[int32](0),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
			},
		}
	}
	sets := env.Kube.AppsV1().StatefulSets(ns)
	const image = "ghcr.io/acme/notebook:1.0"
	// The binding takes a moment to be enforced: a disallowed image is refused once it is.
	require.Eventually(t, func() bool {
		_, err := sets.Create(ctx, statefulSet("probe", "ghcr.io/other/notebook:1.0"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil
	}, 30*time.Second, 200*time.Millisecond, "the copied policy is enforced")
	_, err = sets.Create(ctx, statefulSet("notebook", image), metav1.CreateOptions{})
	require.NoError(t, err, "allowed when it was made")
	require.NoError(t, update(ctx, sets, "notebook", func(s *appsv1.StatefulSet) { s.Spec.Replicas = ptr.To[int32](1) }))

	// The registry leaves the list.
	allowlist.Data[naming.AllowlistKey] = "nvcr.io"
	_, err = env.Kube.CoreV1().ConfigMaps(ns).Update(ctx, allowlist, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, err := sets.Create(ctx, statefulSet("probe", image), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil
	}, 30*time.Second, 200*time.Millisecond, "a new StatefulSet with the removed registry's image is refused")

	// A stop and an annotation go through; a new image does not.
	require.NoError(t, update(ctx, sets, "notebook", func(s *appsv1.StatefulSet) {
		s.Spec.Replicas = ptr.To[int32](0)
		s.Annotations = map[string]string{"gantry.dev/idle-episode": "1"}
	}), "stopping a StatefulSet whose image left the allowlist")
	err = update(ctx, sets, "notebook", func(s *appsv1.StatefulSet) {
		s.Spec.Template.Spec.Containers[0].Image = "ghcr.io/acme/notebook:2.0"
	})
	require.Error(t, err, "a new image from the removed registry")
	assert.Contains(t, err.Error(), "Images must come from an allowed registry (nvcr.io/)")
}

// bindImagePolicyCopy creates a copy of deploy/policies/image-allowlist.yaml
// (its policy and binding, named ns) bound to namespace ns only, reading
// its allowlist from the ConfigMap param in ns, and removes both when the
// test ends. It returns the binding as created.
func bindImagePolicyCopy(t *testing.T, env *stacktest.Env, ns, param string) admissionv1.ValidatingAdmissionPolicyBinding {
	t.Helper()
	ctx := context.Background()
	data, err := os.ReadFile(repoPath("deploy", "policies", "image-allowlist.yaml"))
	require.NoError(t, err)
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var vap admissionv1.ValidatingAdmissionPolicy
	var binding admissionv1.ValidatingAdmissionPolicyBinding
	require.NoError(t, dec.Decode(&vap))
	require.NoError(t, dec.Decode(&binding))

	api := env.Kube.AdmissionregistrationV1()
	vap.Name = ns
	binding.Name, binding.Spec.PolicyName = ns, ns
	binding.Spec.ParamRef.Name, binding.Spec.ParamRef.Namespace = param, ns
	binding.Spec.MatchResources.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}}
	_, err = api.ValidatingAdmissionPolicies().Create(ctx, &vap, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = api.ValidatingAdmissionPolicies().Delete(context.Background(), vap.Name, metav1.DeleteOptions{})
	})
	_, err = api.ValidatingAdmissionPolicyBindings().Create(ctx, &binding, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = api.ValidatingAdmissionPolicyBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
	})
	return binding
}

// update reads the StatefulSet, changes it and writes it back, again when
// its controller wrote in between.
func update(ctx context.Context, sets appsv1client.StatefulSetInterface, name string, change func(*appsv1.StatefulSet)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s, err := sets.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		change(s)
		_, err = sets.Update(ctx, s, metav1.UpdateOptions{})
		return err
	})
}
