// Package gantry_test checks the Helm chart: helm lint, what it renders with
// default and custom values, that the portal's RBAC rules are exactly the
// ones documented in README.md, that the copied files match their sources,
// and that the rendered chart applies to the local cluster (server-side dry
// run). helm is built from the pin in deploy/tools/helm.
package gantry_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	kueueclient "sigs.k8s.io/kueue/client-go/clientset/versioned"

	"github.com/gantry-dev/gantry/e2e"
	"github.com/gantry-dev/gantry/internal/devcluster"
	"github.com/gantry-dev/gantry/internal/devcluster/stacktest"
)

// kubeVersion is what renders assume; helm's own default (1.20) is older
// than the chart's kubeVersion constraint.
const kubeVersion = "1.37.0"

// customValues change names, turn optional parts on and off and use an
// existing Secret, as a platform team's values file would.
const customValues = `
fullnameOverride: portal
replicaCount: 3
config:
  publicURL: https://gantry.example.com
oidc:
  issuerURL: https://login.example.com/
existingSecret:
  name: portal-secrets
leaderElection:
  leaseName: portal-lease
serviceAccount:
  name: portal-sa
ingress:
  enabled: true
  className: nginx
  hosts: [gantry.example.com]
  tls:
    enabled: true
    secretName: gantry-example-tls
serviceMonitor:
  enabled: true
admissionPolicies:
  enabled: false
priorityClasses:
  enabled: false
teamRoles:
  enabled: false
podDisruptionBudget:
  enabled: false
networkPolicy:
  enabled: false
`

func TestHelmLint(t *testing.T) {
	helm := helmBinary(t)
	custom := writeValues(t, customValues)
	cases := map[string][]string{
		"default values": nil,
		"custom values":  {"--values", custom},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			out, err := exec.Command(helm, append([]string{"lint", "--strict", chartDir(t)}, args...)...).CombinedOutput()
			require.NoError(t, err, "helm lint:\n%s", out)
			assert.Contains(t, string(out), "0 chart(s) failed")
		})
	}
}

func TestChartCopiesMatchTheirSources(t *testing.T) {
	root := repoRoot(t)
	pairs := map[string]string{
		"files/priorities.yaml": filepath.Join(root, "deploy", "local", "cluster", "priorities.yaml"),
		"files/team-roles.yaml": filepath.Join(root, "deploy", "local", "cluster", "rbac.yaml"),
	}
	sources, err := filepath.Glob(filepath.Join(root, "deploy", "policies", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, sources, "no admission policies in deploy/policies")
	for _, src := range sources {
		pairs["files/policies/"+filepath.Base(src)] = src
	}
	copies, err := filepath.Glob(filepath.Join(chartDir(t), "files", "policies", "*.yaml"))
	require.NoError(t, err)
	for _, c := range copies {
		_, ok := pairs["files/policies/"+filepath.Base(c)]
		assert.True(t, ok, "%s has no source in deploy/policies: remove it", c)
	}
	for copyPath, src := range pairs {
		want, err := os.ReadFile(src)
		require.NoError(t, err)
		got, err := os.ReadFile(filepath.Join(chartDir(t), copyPath))
		if errors.Is(err, os.ErrNotExist) {
			t.Errorf("chart lacks %s: cp %s deploy/helm/gantry/%s", copyPath, relToRoot(t, src), copyPath)
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got), "deploy/helm/gantry/%s differs from its source: cp %s deploy/helm/gantry/%s",
			copyPath, relToRoot(t, src), copyPath)
	}
}

func TestRBACRulesAreExactlyTheDocumentedOnes(t *testing.T) {
	documented := readDocumentedRules(t)
	require.Len(t, documented, 19, "README's RBAC table")
	cases := map[string]struct {
		values    string
		leaseName string
		when      func(docRule) bool
	}{
		"default values": {leaseName: "gantry-leader", when: func(docRule) bool { return true }},
		"custom values":  {values: customValues, leaseName: "portal-lease", when: func(docRule) bool { return true }},
		"leader election off": {values: "leaderElection: {enabled: false}", leaseName: "gantry-leader",
			when: func(r docRule) bool { return !strings.Contains(r.when, "leaderElection.enabled") }},
		"rbac off": {values: "rbac: {create: false}", when: func(docRule) bool { return false }},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			objs := render(t, "gantry-system", tc.values)
			var want []string
			for _, r := range documented {
				if tc.when(r) {
					want = append(want, r.key(tc.leaseName))
				}
			}
			got := portalRules(t, objs, "gantry-system")
			slices.Sort(want)
			slices.Sort(got)
			assert.Equal(t, want, got, "rules bound to the portal's ServiceAccount vs deploy/helm/gantry/README.md")
		})
	}
}

func TestDefaultValuesRenderAHighlyAvailableHardenedPortal(t *testing.T) {
	objs := render(t, "gantry-system", "")
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.GetKind()]++
	}
	for _, k := range []string{"Deployment", "Service", "ServiceAccount", "ConfigMap", "Secret", "PodDisruptionBudget", "NetworkPolicy",
		"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "WorkloadPriorityClass"} {
		assert.Positive(t, kinds[k], "default render lacks a %s", k)
	}
	assert.Zero(t, kinds["Ingress"], "Ingress is optional and off by default")
	assert.Zero(t, kinds["ServiceMonitor"], "ServiceMonitor needs its CRD and is off by default")
	assert.Equal(t, 4, kinds["WorkloadPriorityClass"])

	var d appsv1.Deployment
	convert(t, find(t, objs, "Deployment", "gantry"), &d)
	assert.Equal(t, int32(2), *d.Spec.Replicas)
	pod := d.Spec.Template.Spec
	require.Len(t, pod.Containers, 1)
	c := pod.Containers[0]
	assert.Equal(t, "/readyz", c.ReadinessProbe.HTTPGet.Path)
	assert.Equal(t, "/healthz", c.LivenessProbe.HTTPGet.Path)
	assert.True(t, *pod.SecurityContext.RunAsNonRoot)
	assert.True(t, *c.SecurityContext.ReadOnlyRootFilesystem)
	assert.False(t, *c.SecurityContext.AllowPrivilegeEscalation)
	assert.Equal(t, []corev1.Capability{"ALL"}, c.SecurityContext.Capabilities.Drop)
	assert.Empty(t, pod.Volumes, "no writable volume is needed")
	assert.False(t, c.Resources.Requests.Cpu().IsZero())
	assert.False(t, c.Resources.Requests.Memory().IsZero())
	require.Len(t, pod.TopologySpreadConstraints, 2)
	assert.Equal(t, "gantry", pod.TopologySpreadConstraints[0].LabelSelector.MatchLabels["app.kubernetes.io/name"])
	env := envOf(c)
	assert.Equal(t, "gantry", env["GANTRY_OIDC_CLIENT_SECRET"].SecretKeyRef.Name)
	assert.Equal(t, "metadata.name", env["POD_NAME"].FieldRef.FieldPath)

	var cm corev1.ConfigMap
	convert(t, find(t, objs, "ConfigMap", "gantry"), &cm)
	assert.Equal(t, "true", cm.Data["GANTRY_LEADER_ELECTION"])
	assert.Equal(t, "gantry-system", cm.Data["GANTRY_LEADER_ELECTION_NAMESPACE"])
	assert.Equal(t, "gantry-leader", cm.Data["GANTRY_LEADER_ELECTION_NAME"])
	assert.Empty(t, cm.Data["GANTRY_KUBECONFIG"], "in-cluster configuration from the ServiceAccount")
	assert.Equal(t, "gantry-system", cm.Data["GANTRY_SYSTEM_NAMESPACE"])
	assert.Equal(t, "oidc:", cm.Data["GANTRY_IMPERSONATION_USER_PREFIX"], "impersonated users carry the prefix (README: rule 11)")
	assert.Equal(t, "oidc:", cm.Data["GANTRY_IMPERSONATION_GROUP_PREFIX"], "impersonated groups carry the prefix (README: rule 11)")
	assert.Equal(t, "720h", cm.Data["GANTRY_TOKEN_OWNER_INACTIVITY"])
	assert.Equal(t, "45", cm.Data["GANTRY_DATABASE_MAX_CONNS"], "two replicas' connections stay under PostgreSQL's default 100")
	assert.Equal(t, "5s", cm.Data["GANTRY_ACCEPTANCE_INTERVAL"], "the leader advances acceptance runs")
	assert.Equal(t, "15m", cm.Data["GANTRY_ACCEPTANCE_STEP_TIMEOUT"])

	// The image policy's allowlist starts as config.imageRegistries, where its binding looks.
	var allowlist corev1.ConfigMap
	convert(t, find(t, objs, "ConfigMap", "gantry-image-allowlist"), &allowlist)
	assert.Equal(t, "gantry-system", allowlist.Namespace)
	assert.Equal(t, "nvcr.io\nquay.io/jupyter\ndocker.io/vllm", allowlist.Data["registries"])
	binding := find(t, objs, "ValidatingAdmissionPolicyBinding", "gantry-image-allowlist")
	ref, _, _ := unstructured.NestedStringMap(binding.Object, "spec", "paramRef")
	assert.Equal(t, map[string]string{"name": "gantry-image-allowlist", "namespace": "gantry-system", "parameterNotFoundAction": "Deny"}, ref)
}

func TestCustomValuesAreHonoured(t *testing.T) {
	objs := render(t, "platform", customValues)
	var d appsv1.Deployment
	convert(t, find(t, objs, "Deployment", "portal"), &d)
	assert.Equal(t, int32(3), *d.Spec.Replicas)
	assert.Equal(t, "portal-sa", d.Spec.Template.Spec.ServiceAccountName)
	env := envOf(d.Spec.Template.Spec.Containers[0])
	assert.Equal(t, "portal-secrets", env["GANTRY_DATABASE_URL"].SecretKeyRef.Name)
	assert.Equal(t, "database-url", env["GANTRY_DATABASE_URL"].SecretKeyRef.Key)

	ing := find(t, objs, "Ingress", "portal")
	tls, _, _ := unstructured.NestedSlice(ing.Object, "spec", "tls")
	require.Len(t, tls, 1)
	assert.Equal(t, "gantry-example-tls", tls[0].(map[string]any)["secretName"])
	find(t, objs, "ServiceMonitor", "portal")

	for _, kind := range []string{"Secret", "ValidatingAdmissionPolicy", "WorkloadPriorityClass", "PodDisruptionBudget", "NetworkPolicy"} {
		for _, o := range objs {
			assert.NotEqual(t, kind, o.GetKind(), "%s %s rendered though disabled", kind, o.GetName())
		}
	}
	for _, o := range objs {
		assert.False(t, o.GetKind() == "ClusterRole" && strings.HasPrefix(o.GetName(), "gantry-"), "team role %s rendered though disabled", o.GetName())
	}
}

func TestRenderedChartAppliesToTheClusterWithServerSideDryRun(t *testing.T) {
	env := stacktest.Stack(t)
	ns := env.Namespace(t, "chart", nil)
	kubectl := filepath.Join(env.Layout.Local(), "bin", "kubectl")
	cases := map[string]string{
		"default values": "",
		// ServiceMonitor stays off: the local cluster has no Prometheus Operator CRDs.
		"custom values": strings.Replace(customValues, "serviceMonitor:\n  enabled: true", "serviceMonitor:\n  enabled: false", 1),
	}
	for name, values := range cases {
		t.Run(name, func(t *testing.T) {
			manifest := renderRaw(t, ns, values)
			cmd := exec.Command(kubectl, "--kubeconfig", env.Kubeconfig, "apply", "--server-side", "--dry-run=server",
				"--force-conflicts", "--field-manager=gantry-chart-test", "-f", "-")
			cmd.Stdin = bytes.NewReader(manifest)
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "kubectl apply --server-side --dry-run=server:\n%s", out)
			assert.Contains(t, string(out), "deployment.apps/")
			assert.Contains(t, string(out), "(server dry run)")
		})
	}
}

// docRule is one row of the README's RBAC table.
type docRule struct {
	scope, groups, resources, verbs, names, when string
}

// key is the rule in the form portalRules produces; <leaderElection.leaseName> is replaced.
func (r docRule) key(leaseName string) string {
	names := strings.ReplaceAll(r.names, "<leaderElection.leaseName>", leaseName)
	return ruleKey(r.scope, list(r.groups), list(r.resources), list(r.verbs), list(names))
}

func readDocumentedRules(t *testing.T) []docRule {
	t.Helper()
	f, err := os.Open(filepath.Join(chartDir(t), "README.md"))
	require.NoError(t, err)
	defer f.Close()
	var rules []docRule
	inTable := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			inTable = line == "## RBAC, rule by rule"
			continue
		}
		if !inTable || !strings.HasPrefix(line, "| ") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(strings.ReplaceAll(cells[i], "`", ""))
		}
		if len(cells) != 8 || cells[0] == "#" {
			continue
		}
		group := cells[2]
		if group == "core" {
			group = `""`
		}
		rules = append(rules, docRule{scope: cells[1], groups: group, resources: cells[3], verbs: cells[4], names: cells[5], when: cells[6]})
	}
	require.NoError(t, sc.Err())
	return rules
}

// portalRules are the rules of every Role and ClusterRole bound to the
// portal's ServiceAccount, one key each.
func portalRules(t *testing.T, objs []*unstructured.Unstructured, ns string) []string {
	t.Helper()
	var sa string
	for _, o := range objs {
		if o.GetKind() == "Deployment" {
			sa, _, _ = unstructured.NestedString(o.Object, "spec", "template", "spec", "serviceAccountName")
		}
	}
	require.NotEmpty(t, sa, "Deployment names no ServiceAccount")
	var keys []string
	for _, o := range objs {
		scope := map[string]string{"ClusterRoleBinding": "cluster", "RoleBinding": "namespace"}[o.GetKind()]
		if scope == "" {
			continue
		}
		var b rbacv1.RoleBinding
		convert(t, o, &b)
		if !slices.ContainsFunc(b.Subjects, func(s rbacv1.Subject) bool {
			return s.Kind == "ServiceAccount" && s.Name == sa && s.Namespace == ns
		}) {
			continue
		}
		var role rbacv1.ClusterRole
		convert(t, find(t, objs, b.RoleRef.Kind, b.RoleRef.Name), &role)
		for _, r := range role.Rules {
			groups := slices.Clone(r.APIGroups)
			for i, g := range groups {
				if g == "" {
					groups[i] = `""`
				}
			}
			keys = append(keys, ruleKey(scope, groups, r.Resources, r.Verbs, r.ResourceNames))
		}
	}
	return keys
}

func ruleKey(scope string, groups, resources, verbs, names []string) string {
	norm := func(s []string) string {
		s = slices.Clone(s)
		slices.Sort(s)
		return strings.Join(s, ",")
	}
	return fmt.Sprintf("%s groups=%s resources=%s verbs=%s names=%s", scope, norm(groups), norm(resources), norm(verbs), norm(names))
}

func list(cell string) []string {
	var out []string
	for _, p := range strings.Split(cell, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func render(t *testing.T, ns, values string) []*unstructured.Unstructured {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(renderRaw(t, ns, values)), 4096)
	var objs []*unstructured.Unstructured
	for {
		var m map[string]any
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		if len(m) == 0 {
			continue
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
	require.NotEmpty(t, objs)
	return objs
}

func renderRaw(t *testing.T, ns, values string, extra ...string) []byte {
	t.Helper()
	args := append([]string{"template", "gantry", chartDir(t), "--namespace", ns, "--kube-version", kubeVersion}, extra...)
	if values != "" {
		args = append(args, "--values", writeValues(t, values))
	}
	var stderr bytes.Buffer
	cmd := exec.Command(helmBinary(t), args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "helm template: %s", stderr.String())
	return out
}

func find(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	t.Fatalf("rendered chart has no %s %q", kind, name)
	return nil
}

func convert(t *testing.T, o *unstructured.Unstructured, into any) {
	t.Helper()
	require.NoError(t, k8sruntime.DefaultUnstructuredConverter.FromUnstructured(o.Object, into), "%s %s", o.GetKind(), o.GetName())
}

func envOf(c corev1.Container) map[string]*corev1.EnvVarSource {
	out := map[string]*corev1.EnvVarSource{}
	for _, e := range c.Env {
		out[e.Name] = e.ValueFrom
	}
	return out
}

func writeValues(t *testing.T, values string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "values.yaml")
	require.NoError(t, os.WriteFile(path, []byte(values), 0o644))
	return path
}

func chartDir(t *testing.T) string {
	t.Helper()
	return filepath.Join(repoRoot(t), "deploy", "helm", "gantry")
}

func repoRoot(t *testing.T) string {
	t.Helper()
	l, err := devcluster.FindLayout(".")
	require.NoError(t, err)
	return l.Root
}

func relToRoot(t *testing.T, path string) string {
	rel, err := filepath.Rel(repoRoot(t), path)
	if err != nil {
		return path
	}
	return rel
}

// helmFiles pin the helm binary; a change in any of them builds it anew.
var helmFiles = []string{"go.mod", "go.sum", "tools.go"}

var helmBuild struct {
	once sync.Once
	path string
	err  error
}

// helmBinary builds helm from deploy/tools/helm into the stack's bin folder
// (keyed by the hash of the pin and the Go version) unless it is there.
func helmBinary(t *testing.T) string {
	t.Helper()
	helmBuild.once.Do(func() { helmBuild.path, helmBuild.err = buildHelm(repoRoot(t)) })
	require.NoError(t, helmBuild.err)
	return helmBuild.path
}

func buildHelm(root string) (string, error) {
	l := devcluster.Layout{Root: root}
	src := l.Deploy("tools", "helm")
	h := sha256.New()
	fmt.Fprintf(h, "go %s\n", runtime.Version())
	for _, f := range helmFiles {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			return "", fmt.Errorf("hash helm pin: %w", err)
		}
		fmt.Fprintf(h, "%s %d\n", f, len(b))
		h.Write(b)
	}
	dir := l.BinDir("helm-" + hex.EncodeToString(h.Sum(nil))[:16])
	bin := filepath.Join(dir, "helm")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", fmt.Errorf("build helm: %w", err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".building-helm-")
	if err != nil {
		return "", fmt.Errorf("build helm: %w", err)
	}
	defer os.RemoveAll(tmp)
	cmd := exec.Command("go", "build", "-o", filepath.Join(tmp, "helm"), "helm.sh/helm/v3/cmd/helm")
	cmd.Dir = src
	// The tools module is built on its own, never with the caller's flags.
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build helm (go build in deploy/tools/helm): %w\n%s", err, out)
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", fmt.Errorf("build helm: %w", err)
	}
	// Another test binary may have won the race; its binary is as good.
	if err := os.Rename(tmp, dir); err != nil {
		if _, statErr := os.Stat(bin); statErr == nil {
			return bin, nil
		}
		return "", fmt.Errorf("install helm into %s: %w", dir, err)
	}
	return bin, nil
}

func TestContainerfileCopiesWhatThePortalBuildsFrom(t *testing.T) {
	root := repoRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "deploy", "Containerfile"))
	require.NoError(t, err)
	copied := map[string]bool{}
	var lastFrom, user string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 3 && f[0] == "COPY" && strings.HasSuffix(f[1], "/"):
			copied[strings.TrimSuffix(f[1], "/")] = true
		case len(f) >= 2 && f[0] == "FROM":
			lastFrom, user = f[1], ""
		case len(f) == 2 && f[0] == "USER":
			user = f[1]
		}
	}
	assert.Contains(t, lastFrom, "distroless/static", "final stage should be distroless static")
	assert.Equal(t, "65532:65532", user, "final stage should run as non-root, as the chart expects")

	cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", "./cmd/gantry")
	cmd.Dir = root
	out, err := cmd.Output()
	require.NoError(t, err)
	const module = "github.com/gantry-dev/gantry/"
	for _, pkg := range strings.Fields(string(out)) {
		if rel, ok := strings.CutPrefix(pkg, module); ok {
			top, _, _ := strings.Cut(rel, "/")
			assert.True(t, copied[top], "Containerfile does not COPY %s/, which %s is built from", top, pkg)
		}
	}
}

// TestPortalWorksWithOnlyTheChartsRBAC runs a portal whose kubeconfig is a
// token of the chart's ServiceAccount, bound only to the chart's rules: its
// caches sync, it takes the leader Lease, a team lead sees the team's queue
// and a researcher launches a notebook as herself (impersonation), with no
// "forbidden" from the API server on the way.
func TestPortalWorksWithOnlyTheChartsRBAC(t *testing.T) {
	env := stacktest.Stack(t)
	ns := env.Namespace(t, "gantry-rbac", nil)
	root := repoRoot(t)

	// Only the ServiceAccount and its RBAC, named after the namespace so
	// the cluster-scoped ClusterRole is this test's own.
	manifest := renderRaw(t, ns, "fullnameOverride: "+ns+"\n", "--show-only", "templates/serviceaccount.yaml", "--show-only", "templates/rbac.yaml")
	kubectl := filepath.Join(env.Layout.Local(), "bin", "kubectl")
	apply := exec.Command(kubectl, "--kubeconfig", env.Kubeconfig, "apply", "--server-side", "--field-manager=gantry-chart-test", "-f", "-")
	apply.Stdin = bytes.NewReader(manifest)
	out, err := apply.CombinedOutput()
	require.NoError(t, err, "apply the chart's RBAC:\n%s", out)
	t.Cleanup(func() {
		ctx := context.Background()
		_ = env.Kube.RbacV1().ClusterRoleBindings().Delete(ctx, ns, metav1.DeleteOptions{})
		_ = env.Kube.RbacV1().ClusterRoles().Delete(ctx, ns, metav1.DeleteOptions{})
	})

	tok, err := env.Kube.CoreV1().ServiceAccounts(ns).CreateToken(t.Context(), ns,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	require.NoError(t, err)
	kubeconfig := serviceAccountKubeconfig(t, env.RESTConfig, tok.Status.Token)

	portal := e2e.StartPortal(t,
		e2e.WithEnv("GANTRY_KUBECONFIG", kubeconfig),
		e2e.WithEnv("GANTRY_SEED_TEMPLATES", filepath.Join(root, "deploy", "templates")),
		e2e.WithEnv("GANTRY_LEADER_ELECTION", "true"),
		e2e.WithEnv("GANTRY_LEADER_ELECTION_NAMESPACE", ns),
		e2e.WithEnv("GANTRY_LEADER_ELECTION_NAME", "gantry-leader"),
		e2e.WithEnv("GANTRY_LEADER_ELECTION_LEASE_DURATION", "4s"),
		e2e.WithEnv("GANTRY_LEADER_ELECTION_RENEW_DEADLINE", "3s"),
		e2e.WithEnv("GANTRY_LEADER_ELECTION_RETRY_PERIOD", "500ms"),
		// Its own system namespace, so the image allowlist it writes at
		// start (creating it: rule 16) is not the one the policies read.
		e2e.WithEnv("GANTRY_SYSTEM_NAMESPACE", ns),
	)
	require.Eventually(t, func() bool { return metricsSay(portal.URL, "gantry_leader 1") }, 10*time.Second, 100*time.Millisecond,
		"portal never took the leader Lease with the chart's rights")
	resp, err := http.Get(portal.URL + "/readyz")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "readyz with the chart's rights")
	allowlist, err := env.Kube.CoreV1().ConfigMaps(ns).Get(t.Context(), "gantry-image-allowlist", metav1.GetOptions{})
	require.NoError(t, err, "the portal writes the image allowlist at start with the chart's rights")
	assert.Equal(t, "nvcr.io\nquay.io/jupyter\ndocker.io/vllm", allowlist.Data["registries"])

	lead := e2e.NewBrowser(t, portal)
	lead.LoginAs("bob")
	lead.Open("/")
	lead.WaitForTestID("team-vision")
	assert.False(t, lead.HasTestID("cluster-error"), "the read model could not list Kueue objects")
	assert.Equal(t, "default", lead.Text(`[data-testid="team-vision"] [data-testid="team-queue"]`))

	b := e2e.NewBrowser(t, portal)
	b.LoginAs("alice")
	b.Open("/launch")
	b.Submit(`[data-testid="launch-jupyter-pytorch"]`)
	b.Submit(`[data-testid="launch-submit"]`)
	require.True(t, strings.HasPrefix(b.Path(), "/teams/vision/jobs/jupyter-pytorch-"), "launch as alice should land on the job page, at %s", b.Path())
	name := strings.TrimPrefix(b.Path(), "/teams/vision/jobs/")
	t.Cleanup(func() {
		_ = env.Kube.AppsV1().StatefulSets("team-vision").Delete(context.Background(), name, metav1.DeleteOptions{})
		_ = env.Kube.CoreV1().Services("team-vision").Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	sts, err := env.Kube.AppsV1().StatefulSets("team-vision").Get(t.Context(), name, metav1.GetOptions{})
	require.NoError(t, err, "the notebook should exist in the cluster")
	assert.Equal(t, "alice", sts.Labels["gantry.dev/owner"])
	require.Eventually(t, func() bool {
		b.Open("/teams/vision/jobs/" + name)
		return b.TestIDText("job-phase") == "running"
	}, 2*time.Minute, 2*time.Second, "job status never read from the caches")

	assert.NotContains(t, strings.ToLower(portal.Log()), "forbidden", "the chart's rules lack something the portal does")

	// Queue positions come from Kueue's visibility API, whose errors the
	// job page leaves out: make the portal's call with its token directly.
	saCfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	require.NoError(t, err)
	kq, err := kueueclient.NewForConfig(saCfg)
	require.NoError(t, err)
	_, err = kq.VisibilityV1beta2().LocalQueues("team-vision").GetPendingWorkloadsSummary(t.Context(), "default", metav1.GetOptions{})
	assert.NoError(t, err, "pending positions with the chart's rights")
}

// metricsSay reports whether the portal's /metrics has the exact line.
func metricsSay(base, line string) bool {
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return false
	}
	return slices.Contains(strings.Split(string(b), "\n"), line)
}

// serviceAccountKubeconfig writes a kubeconfig for the API server of base
// that authenticates with token only.
func serviceAccountKubeconfig(t *testing.T, base *rest.Config, token string) string {
	t.Helper()
	ca := base.CAData
	if len(ca) == 0 && base.CAFile != "" {
		var err error
		ca, err = os.ReadFile(base.CAFile)
		require.NoError(t, err)
	}
	require.NotEmpty(t, ca, "no CA of the API server in the admin kubeconfig")
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: base.Host, CertificateAuthorityData: ca}
	cfg.AuthInfos["gantry"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["gantry"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "gantry"}
	cfg.CurrentContext = "gantry"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*cfg, path))
	return path
}

// TestWorkloadPolicyKnowsPeopleByTheImpersonationPrefix: the owner and
// priority rules hold the users the portal impersonates, whatever prefix
// the chart gives them.
func TestWorkloadPolicyKnowsPeopleByTheImpersonationPrefix(t *testing.T) {
	cases := map[string]struct{ values, want string }{
		"default":       {want: "'oidc:'"},
		"custom prefix": {values: "config: {impersonation: {userPrefix: 'corp:'}}", want: "'corp:'"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			vap := find(t, render(t, "gantry-system", tc.values), "ValidatingAdmissionPolicy", "gantry-workload-labels")
			vars, _, _ := unstructured.NestedSlice(vap.Object, "spec", "variables")
			got := map[string]any{}
			for _, v := range vars {
				m := v.(map[string]any)
				got[m["name"].(string)] = m["expression"]
			}
			assert.Equal(t, tc.want, got["userPrefix"])
		})
	}
}
