package devcluster_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/gantry-dev/gantry/internal/catalog"
	"github.com/gantry-dev/gantry/internal/devcluster"
	"github.com/gantry-dev/gantry/internal/devcluster/stacktest"
	"github.com/gantry-dev/gantry/internal/naming"
)

// randomSuffix keeps real objects of reruns apart.
func randomSuffix(t *testing.T) string {
	t.Helper()
	b := make([]byte, 3)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return hex.EncodeToString(b)
}

// identityPrefix is how IdP users and groups appear in the cluster, through
// the portal's impersonation and the cluster's OIDC authenticator alike.
const identityPrefix = "oidc:"

// asPerson is a client acting as an IdP user with IdP groups, prefixed as
// the portal impersonates them and as kubectl OIDC users authenticate.
func asPerson(t *testing.T, env *stacktest.Env, user string, groups ...string) kubernetes.Interface {
	t.Helper()
	cfg := *env.RESTConfig
	cfg.Impersonate.UserName = identityPrefix + user
	for _, g := range groups {
		cfg.Impersonate.Groups = append(cfg.Impersonate.Groups, identityPrefix+g)
	}
	kube, err := kubernetes.NewForConfig(&cfg)
	require.NoError(t, err)
	return kube
}

// labelJob sets a label on a Job and its pod template.
func labelJob(j *batchv1.Job, key, value string) {
	j.Labels[key] = value
	j.Spec.Template.Labels[key] = value
}

// aliceJob is a compliant training Job of team vision owned by alice.
func aliceJob(name string) *batchv1.Job {
	j := stacktest.OwnedBy(stacktest.CompliantJob("vision", name, quota("cpu", "1", "memory", "1Gi")), "alice")
	labelJob(j, naming.LabelPriorityClass, string(catalog.KindTraining))
	return j
}

// TestPeopleCannotLabelAnotherPriorityOrOwner: a researcher using kubectl
// (or the portal acting as her) cannot queue a training Job at inference
// priority to preempt teammates, nor label it as someone else's.
func TestPeopleCannotLabelAnotherPriorityOrOwner(t *testing.T) {
	env := stacktest.Stack(t)
	ctx := context.Background()
	alice := asPerson(t, env, "alice", "vision-researchers")
	job := func(mutate func(*batchv1.Job)) *batchv1.Job {
		j := aliceJob("labels-check")
		mutate(j)
		return j
	}
	cases := map[string]struct {
		job     *batchv1.Job
		wantErr string
	}{
		"own job at its kind's priority": {job: job(func(*batchv1.Job) {})},
		"own job lowered to batch":       {job: job(func(j *batchv1.Job) { labelJob(j, naming.LabelPriorityClass, "batch") })},
		"training at inference priority": {
			job:     job(func(j *batchv1.Job) { labelJob(j, naming.LabelPriorityClass, string(catalog.KindInference)) }),
			wantErr: "A training workload may run at priority training or batch, not inference (label kueue.x-k8s.io/priority-class).",
		},
		"pod template at inference priority": {
			job: job(func(j *batchv1.Job) {
				j.Spec.Template.Labels[naming.LabelPriorityClass] = string(catalog.KindInference)
			}),
			wantErr: "may run at priority training or batch, not inference",
		},
		"training relabelled as inference kind": {
			job: job(func(j *batchv1.Job) {
				labelJob(j, naming.LabelKind, string(catalog.KindNotebook))
				labelJob(j, naming.LabelPriorityClass, string(catalog.KindInference))
			}),
			wantErr: "A notebook workload may run at priority notebook or batch, not inference",
		},
		"owned by someone else": {
			job:     job(func(j *batchv1.Job) { labelJob(j, naming.LabelOwner, "bob") }),
			wantErr: "You (alice) can only create workloads labelled with yourself as gantry.dev/owner, on the Job and its pod template, not bob.",
		},
		"pod template owned by someone else": {
			job:     job(func(j *batchv1.Job) { j.Spec.Template.Labels[naming.LabelOwner] = "bob" }),
			wantErr: "You (alice) can only create workloads labelled with yourself",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := alice.BatchV1().Jobs("team-vision").Create(ctx, tc.job, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if tc.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.True(t, apierrors.IsForbidden(err), "forbidden, got %v", err)
			assert.Contains(t, err.Error(), tc.wantErr)
		})
	}

	t.Run("owner cannot be changed later", func(t *testing.T) {
		created, err := alice.BatchV1().Jobs("team-vision").Create(ctx, aliceJob("owner-"+randomSuffix(t)), metav1.CreateOptions{})
		require.NoError(t, err)
		t.Cleanup(func() {
			_ = env.Kube.BatchV1().Jobs("team-vision").Delete(context.Background(), created.Name,
				metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
		})
		patch := []byte(`{"metadata":{"labels":{"gantry.dev/owner":"bob"}}}`)
		_, err = alice.BatchV1().Jobs("team-vision").Patch(ctx, created.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		require.Error(t, err)
		assert.True(t, apierrors.IsForbidden(err), "forbidden, got %v", err)
		assert.Contains(t, err.Error(), "The owner of this Job (gantry.dev/owner=alice) cannot be changed.")
	})

	t.Run("cluster admins and controllers are not held to it", func(t *testing.T) {
		// The admin's certificate is no "oidc:" person: tests and operators
		// may queue any priority (controllers never label workloads).
		j := job(func(j *batchv1.Job) {
			labelJob(j, naming.LabelPriorityClass, string(catalog.KindInference))
			labelJob(j, naming.LabelOwner, "bob")
		})
		_, err := env.Kube.BatchV1().Jobs("team-vision").Create(ctx, j, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		require.NoError(t, err)
	})
}

// TestPodSecurityGapsAreRefused: a container that undoes the pod's safe
// settings, in a pod template or an init or debug container, is refused.
func TestPodSecurityGapsAreRefused(t *testing.T) {
	env := stacktest.Stack(t)
	ctx := context.Background()
	rootContainer := func(s *corev1.PodSpec) {
		s.Containers[0].SecurityContext.RunAsNonRoot = ptr.To(false)
	}
	unconfined := func(s *corev1.PodSpec) {
		s.Containers[0].SecurityContext.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}
	}
	rootInit := func(s *corev1.PodSpec) {
		init := *s.Containers[0].DeepCopy()
		init.Name = "setup"
		init.Resources = corev1.ResourceRequirements{}
		init.SecurityContext.RunAsNonRoot = ptr.To(false)
		s.InitContainers = []corev1.Container{init}
	}
	const (
		rootErr    = "Every container must run as a non-root user (runAsNonRoot: true, on the pod or the container, and not false on the container): "
		seccompErr = "Every container must use the RuntimeDefault seccomp profile (on the pod or the container, and no other on the container): "
	)
	cases := map[string]struct {
		mutate  func(*corev1.PodSpec)
		wantErr string
	}{
		"container runAsNonRoot false": {mutate: rootContainer, wantErr: rootErr + "main"},
		"container seccomp Unconfined": {mutate: unconfined, wantErr: seccompErr + "main"},
		"init container as root":       {mutate: rootInit, wantErr: rootErr + "setup"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec := stacktest.RestrictedPodSpec(quota("cpu", "1"))
			tc.mutate(&spec)
			j := stacktest.CompliantJob("vision", "psa-gap", quota("cpu", "1"))
			j.Spec.Template.Spec = spec
			dep := &appsv1.Deployment{
				ObjectMeta: metav1.ObjectMeta{Name: "psa-gap", Labels: j.Labels},
				Spec: appsv1.DeploymentSpec{
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{naming.LabelInstance: "psa-gap"}},
					Template: j.Spec.Template,
				},
			}
			dep.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
			dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
			_, jobErr := env.Kube.BatchV1().Jobs("team-vision").Create(ctx, j, dry)
			_, depErr := env.Kube.AppsV1().Deployments("team-vision").Create(ctx, dep, dry)
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "psa-gap"}, Spec: spec}
			_, podErr := env.Kube.CoreV1().Pods("team-vision").Create(ctx, pod, dry)
			for what, err := range map[string]error{"Job": jobErr, "Deployment": depErr} {
				require.Error(t, err, "%s admitted", what)
				assert.True(t, apierrors.IsForbidden(err), "%s: forbidden, got %v", what, err)
				assert.Contains(t, err.Error(), tc.wantErr, what)
			}
			// Pod Security refuses a bare pod first, in its own words.
			require.Error(t, podErr, "Pod admitted")
			assert.Contains(t, podErr.Error(), `violates PodSecurity "restricted:latest"`)
		})
	}

	t.Run("debug container as root", func(t *testing.T) {
		pod, err := env.Kube.CoreV1().Pods("team-vision").Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "debug-" + randomSuffix(t)},
			Spec:       stacktest.RestrictedPodSpec(quota("cpu", "100m")),
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		t.Cleanup(func() {
			_ = env.Kube.CoreV1().Pods("team-vision").Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		})
		pod.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			Name: "debug", Image: stacktest.Image,
			SecurityContext: &corev1.SecurityContext{
				RunAsNonRoot: ptr.To(false), AllowPrivilegeEscalation: ptr.To(false),
				Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			},
		}}}
		_, err = env.Kube.CoreV1().Pods("team-vision").UpdateEphemeralContainers(ctx, pod.Name, pod, metav1.UpdateOptions{})
		require.Error(t, err, "a root debug container was added")
		assert.True(t, apierrors.IsForbidden(err), "forbidden, got %v", err)
	})
}

// TestTeamNamespaceKeepsRestrictedPodSecurity: a namespace labelled as a
// team's by hand, or a team namespace loosened, is refused.
func TestTeamNamespaceKeepsRestrictedPodSecurity(t *testing.T) {
	env := stacktest.Stack(t)
	ctx := context.Background()
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	cases := map[string]struct {
		labels  map[string]string
		wantErr string
	}{
		"team label alone": {labels: map[string]string{naming.LabelTeam: "vision"},
			wantErr: "is a team namespace (gantry.dev/team=vision) and must keep pod-security.kubernetes.io/enforce: restricted at the latest version (found enforce: none, version latest)."},
		"baseline": {labels: map[string]string{naming.LabelTeam: "vision", "pod-security.kubernetes.io/enforce": "baseline"},
			wantErr: "(found enforce: baseline, version latest)"},
		"restricted of an old version": {labels: map[string]string{naming.LabelTeam: "vision",
			"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "v1.22"},
			wantErr: "(found enforce: restricted, version v1.22)"},
		"restricted":            {labels: map[string]string{naming.LabelTeam: "vision", "pod-security.kubernetes.io/enforce": "restricted"}},
		"no team, no pod label": {labels: map[string]string{"purpose": "scratch"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := env.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
				ObjectMeta: metav1.ObjectMeta{GenerateName: "by-hand-", Labels: tc.labels},
			}, dry)
			if tc.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.True(t, apierrors.IsForbidden(err), "forbidden, got %v", err)
			assert.Contains(t, err.Error(), tc.wantErr)
		})
	}

	t.Run("loosening a team namespace", func(t *testing.T) {
		patch := []byte(`{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":"privileged"}}}`)
		_, err := env.Kube.CoreV1().Namespaces().Patch(ctx, "team-vision", types.MergePatchType, patch,
			metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "Namespace team-vision is a team namespace (gantry.dev/team=vision) and must keep pod-security.kubernetes.io/enforce: restricted")
	})
}

// TestTeamNamespacesAdmitIngressOnlyFromTheTeamAndThePortal: a pod of team
// nlp cannot reach a Service of team vision; vision's own pods and the
// portal can. The local stack has no network plugin, so the NetworkPolicies
// in force are evaluated here, against the objects as the API server
// admits them (server-side dry runs).
func TestTeamNamespacesAdmitIngressOnlyFromTheTeamAndThePortal(t *testing.T) {
	env := stacktest.Stack(t)
	ctx := context.Background()
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}

	notebook := stacktest.WorkloadLabels("vision", "notebook-x", catalog.KindNotebook)
	svc, err := env.Kube.CoreV1().Services("team-vision").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "notebook-x", Labels: notebook},
		Spec: corev1.ServiceSpec{Selector: map[string]string{naming.LabelInstance: "notebook-x"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 8888}}},
	}, dry)
	require.NoError(t, err)
	pod := func(namespace, name string, labels map[string]string) *corev1.Pod {
		t.Helper()
		p, err := env.Kube.CoreV1().Pods(namespace).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Spec:       stacktest.RestrictedPodSpec(quota("cpu", "100m")),
		}, dry)
		require.NoError(t, err, "dry-run pod %s/%s", namespace, name)
		return p
	}
	backend := pod("team-vision", "notebook-x-0", notebook)
	require.True(t, labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(backend.Labels)), "the Service routes to the notebook pod")

	cases := map[string]struct {
		from  *corev1.Pod
		reach bool
	}{
		"pod of team nlp":                 {from: pod("team-nlp", "nlp-train-0", stacktest.WorkloadLabels("nlp", "nlp-train", catalog.KindTraining))},
		"pod of team vision":              {from: pod("team-vision", "vision-train-0", stacktest.WorkloadLabels("vision", "vision-train", catalog.KindTraining)), reach: true},
		"portal pod":                      {from: portalPod(t, env, map[string]string{naming.LabelPartOf: naming.PartOf, "app.kubernetes.io/name": "gantry"}), reach: true},
		"other pod of portal's namespace": {from: portalPod(t, env, map[string]string{"app.kubernetes.io/name": "debug"})},
	}
	policies, err := env.Kube.NetworkingV1().NetworkPolicies("team-vision").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ns, err := env.Kube.CoreV1().Namespaces().Get(ctx, tc.from.Namespace, metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, tc.reach, admitsIngress(t, policies.Items, backend, tc.from, ns),
				"can %s/%s reach Service team-vision/%s", tc.from.Namespace, tc.from.Name, svc.Name)
		})
	}
}

// portalPod is a dry-run pod in the namespace team NetworkPolicies name as
// the portal's (where the chart runs it).
func portalPod(t *testing.T, env *stacktest.Env, podLabels map[string]string) *corev1.Pod {
	t.Helper()
	spec := stacktest.RestrictedPodSpec(nil)
	spec.Containers[0].Image = "ghcr.io/gantry-dev/gantry:1.0.0"
	p, err := env.Kube.CoreV1().Pods(naming.SystemNamespace).Create(context.Background(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "portal-0", Labels: podLabels}, Spec: spec,
	}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	require.NoError(t, err)
	return p
}

// admitsIngress evaluates Kubernetes NetworkPolicy semantics: traffic to a
// pod no ingress policy selects is allowed; else some rule of a selecting
// policy must admit the source. Ports are not restricted by Gantry's rules.
func admitsIngress(t *testing.T, policies []networkingv1.NetworkPolicy, to, from *corev1.Pod, fromNS *corev1.Namespace) bool {
	t.Helper()
	matches := func(sel *metav1.LabelSelector, set map[string]string) bool {
		s, err := metav1.LabelSelectorAsSelector(sel)
		require.NoError(t, err)
		return s.Matches(labels.Set(set))
	}
	selected := false
	for _, p := range policies {
		if p.Namespace != to.Namespace || !matches(&p.Spec.PodSelector, to.Labels) {
			continue
		}
		ingress := len(p.Spec.PolicyTypes) == 0
		for _, pt := range p.Spec.PolicyTypes {
			ingress = ingress || pt == networkingv1.PolicyTypeIngress
		}
		if !ingress {
			continue
		}
		selected = true
		for _, rule := range p.Spec.Ingress {
			require.Empty(t, rule.Ports, "policy %s limits ports; evaluate them", p.Name)
			if len(rule.From) == 0 {
				return true
			}
			for _, peer := range rule.From {
				require.Nil(t, peer.IPBlock, "policy %s admits an IP block; evaluate it", p.Name)
				nsOK := fromNS.Name == p.Namespace
				if peer.NamespaceSelector != nil {
					nsOK = matches(peer.NamespaceSelector, fromNS.Labels)
				}
				if nsOK && (peer.PodSelector == nil || matches(peer.PodSelector, from.Labels)) {
					return true
				}
			}
		}
	}
	return !selected
}

// TestAdminsActInTeamNamespacesOnly: the admin group has a team lead's
// rights in every team namespace and nothing elsewhere.
func TestAdminsActInTeamNamespacesOnly(t *testing.T) {
	env := stacktest.Stack(t)
	ctx := context.Background()
	erin := asPerson(t, env, "erin", devcluster.AdminGroup)
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	plain := env.Namespace(t, "plain", nil)

	j := stacktest.OwnedBy(stacktest.CompliantJob("nlp", "admin-job", quota("cpu", "1", "memory", "1Gi")), "erin")
	_, err := erin.BatchV1().Jobs("team-nlp").Create(ctx, j, dry)
	require.NoError(t, err, "an admin launches in any team namespace")

	forbidden := map[string]error{}
	j.Namespace = plain
	_, forbidden["create a Job outside team namespaces"] = erin.BatchV1().Jobs(plain).Create(ctx, j, dry)
	_, forbidden["create a Pod outside team namespaces"] = erin.CoreV1().Pods(plain).Create(ctx,
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: stacktest.RestrictedPodSpec(nil)}, dry)
	_, forbidden["loosen a team namespace"] = erin.CoreV1().Namespaces().Patch(ctx, "team-nlp", types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":"privileged"}}}`), metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
	_, forbidden["create a ServiceAccount in a team namespace"] = erin.CoreV1().ServiceAccounts("team-nlp").Create(ctx,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "sa"}}, dry)
	_, forbidden["read Secrets of a team"] = erin.CoreV1().Secrets("team-nlp").List(ctx, metav1.ListOptions{})
	_, forbidden["list nodes"] = erin.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	for what, err := range forbidden {
		assert.True(t, apierrors.IsForbidden(err), "%s: forbidden, got %v", what, err)
	}
}
