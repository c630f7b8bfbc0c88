package devcluster

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
)

// Kueue of the local stack: the manager built from the pinned release,
// webhooks registered by URL on loopback.
const (
	procKueue          = "kueue"
	kueueNamespace     = "kueue-system"
	kueueWebhookPort   = 9443
	kueueVisibility    = 8082
	kueueHealthPort    = 8081
	kueueMetricsPort   = 8443
	kueueVisibilityAPI = "v1beta2.visibility.kueue.x-k8s.io"
)

// PodsReadyTimeout is the local Kueue's waitForPodsReady timeout: how long
// an admitted job's pods may take to be ready before Kueue evicts it.
const PodsReadyTimeout = 30 * time.Second

// Webhooks of these API groups are kept from Kueue's manifests; the others
// are for integrations (Ray, Kubeflow, JobSet…) this cluster does not run.
var kueueWebhookGroups = []string{"", "batch", "apps", "kueue.x-k8s.io"}

// Kueue's kustomization keeps its pod, deployment and statefulset webhooks
// away from the system namespaces.
var kueueSystemNamespaceSelectorWebhooks = []string{
	"mpod.kb.io", "vpod.kb.io", "mdeployment.kb.io", "vdeployment.kb.io", "mstatefulset.kb.io", "vstatefulset.kb.io",
}

func kueueComponent() component {
	return component{
		name:      "kueue",
		group:     GroupCluster,
		processes: []string{procKueue},
		ports:     []int{kueueWebhookPort, kueueHealthPort, kueueMetricsPort},
		healthy: func(ctx context.Context, s *Stack) error {
			if _, err := s.process(procKueue); err != nil {
				return err
			}
			return kueueReady(ctx, s)
		},
		start: startKueue,
	}
}

// kueueModuleDir locates the pinned Kueue module's files in the Go module
// cache (downloading it through the module proxy the first time).
func kueueModuleDir(ctx context.Context, s *Stack) (string, error) {
	pins, err := ReadPins(s.layout)
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", "sigs.k8s.io/kueue@"+pins.Kueue)
	cmd.Dir = s.layout.Root
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("locate kueue %s module: %w", pins.Kueue, err)
	}
	var mod struct{ Dir, Error string }
	if err := json.Unmarshal(out, &mod); err != nil {
		return "", fmt.Errorf("locate kueue %s module: %w", pins.Kueue, err)
	}
	if mod.Dir == "" {
		return "", fmt.Errorf("locate kueue %s module: %s", pins.Kueue, mod.Error)
	}
	return mod.Dir, nil
}

func startKueue(ctx context.Context, s *Stack) error {
	a, err := s.applier()
	if err != nil {
		return err
	}
	modDir, err := kueueModuleDir(ctx, s)
	if err != nil {
		return err
	}
	s.progress("    installing Kueue CRDs, webhooks and the visibility API")
	if err := a.apply(ctx, &corev1.Namespace{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: kueueNamespace},
	}); err != nil {
		return err
	}
	crds, err := filepath.Glob(filepath.Join(modDir, "config", "components", "crd", "bases", "*.yaml"))
	if err != nil || len(crds) == 0 {
		return fmt.Errorf("kueue CRDs not found in %s", modDir)
	}
	for _, f := range crds {
		if err := a.applyFile(ctx, f); err != nil {
			return err
		}
	}
	if err := waitCRDsEstablished(ctx, a, "kueue.x-k8s.io"); err != nil {
		return err
	}
	caBundle, err := os.ReadFile(filepath.Join(s.layout.PKI(), "ca.crt"))
	if err != nil {
		return fmt.Errorf("read CA: %w", err)
	}
	hooks, err := kueueWebhookConfigurations(filepath.Join(modDir, "config", "components", "webhook", "manifests.yaml"), caBundle)
	if err != nil {
		return err
	}
	for _, h := range hooks {
		if err := a.applyOne(ctx, h); err != nil {
			return err
		}
	}
	if err := a.applyUnstructured(ctx, visibilityObjects()...); err != nil {
		return err
	}

	configPath := filepath.Join(s.layout.Run(), "kueue-config.yaml")
	if err := os.WriteFile(configPath, []byte(kueueConfig(filepath.Join(s.layout.PKI(), "kueue-webhook"))), 0o644); err != nil {
		return fmt.Errorf("write kueue config: %w", err)
	}
	ps, err := s.run(Process{
		Name: procKueue,
		Path: s.bin(binKueue),
		Args: []string{"--config=" + configPath, "--kubeconfig=" + s.componentKubeconfig("kueue")},
	})
	if err != nil {
		return err
	}
	return waitFor(ctx, "Kueue ready (webhooks and visibility API)", 120*time.Second, ps, func(ctx context.Context) error {
		return kueueReady(ctx, s)
	})
}

func kueueConfig(certDir string) string {
	return fmt.Sprintf(`apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: %s
health:
  healthProbeBindAddress: 127.0.0.1:%d
metrics:
  bindAddress: 127.0.0.1:%d
webhook:
  host: 127.0.0.1
  port: %d
  certDir: %s
leaderElection:
  leaderElect: false
# Kueue's default client writes at most 20 times a second: admitting,
# starting and marking ready 100 new Jobs then takes most of the PodsReady
# timeout below, and the evictions that follow cost more writes.
clientConnection:
  qps: 200
  burst: 400
internalCertManagement:
  enable: false
manageJobsWithoutQueueName: false
# A job whose pods are not all ready this long after admission (an image
# that cannot be pulled, a pod that cannot be scheduled) is evicted and
# requeued after a backoff; kwok's pods are ready within a second or two.
# A failed pod's replacement may wait for the Job's own retry backoff
# (10 s, 20 s, 40 s…), hence the longer recovery timeout.
waitForPodsReady:
  timeout: %s
  blockAdmission: false
  recoveryTimeout: 2m
  requeuingStrategy:
    timestamp: Eviction
    backoffBaseSeconds: 10
    backoffMaxSeconds: 300
integrations:
  frameworks:
  - batch/job
  - pod
  - deployment
  - statefulset
`, kueueNamespace, kueueHealthPort, kueueMetricsPort, kueueWebhookPort, certDir, PodsReadyTimeout)
}

// kueueWebhookConfigurations rewrites Kueue's webhook manifests for a
// manager outside the cluster: URL on loopback with our CA, only the
// integrations we run, system namespaces excluded.
func kueueWebhookConfigurations(path string, caBundle []byte) ([]*unstructured.Unstructured, error) {
	objs, err := readManifests(path)
	if err != nil {
		return nil, err
	}
	systemNamespaces := map[string]any{"matchExpressions": []any{map[string]any{
		"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": []any{"kube-system", kueueNamespace},
	}}}
	for _, o := range objs {
		o.SetName("kueue-" + o.GetName())
		hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
		var kept []any
		for _, h := range hooks {
			hook := h.(map[string]any)
			if !webhookForGroups(hook, kueueWebhookGroups) {
				continue
			}
			p, _, _ := unstructured.NestedString(hook, "clientConfig", "service", "path")
			hook["clientConfig"] = map[string]any{
				"url":      fmt.Sprintf("https://127.0.0.1:%d%s", kueueWebhookPort, p),
				"caBundle": caBundle, // base64-encoded by the JSON encoding
			}
			if slices.Contains(kueueSystemNamespaceSelectorWebhooks, hook["name"].(string)) {
				hook["namespaceSelector"] = systemNamespaces
			}
			kept = append(kept, hook)
		}
		if err := unstructured.SetNestedSlice(o.Object, jsonSafe(kept), "webhooks"); err != nil {
			return nil, fmt.Errorf("rewrite %s: %w", o.GetName(), err)
		}
	}
	return objs, nil
}

// jsonSafe round-trips through JSON so byte slices become base64 strings,
// as unstructured objects require.
func jsonSafe(v []any) []any {
	b, _ := json.Marshal(v)
	var out []any
	_ = json.Unmarshal(b, &out)
	return out
}

func webhookForGroups(hook map[string]any, groups []string) bool {
	rules, _, _ := unstructured.NestedSlice(hook, "rules")
	for _, r := range rules {
		gs, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "apiGroups")
		for _, g := range gs {
			if slices.Contains(groups, g) {
				return true
			}
		}
	}
	return false
}

// visibilityObjects register Kueue's visibility API (pending workloads and
// their positions) with the aggregation layer; the Service points at the
// manager on loopback.
func visibilityObjects() []*unstructured.Unstructured {
	svc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{"name": "visibility-server", "namespace": kueueNamespace},
		"spec": map[string]any{
			"type": "ExternalName", "externalName": "localhost",
			"ports": []any{map[string]any{"name": "https", "port": int64(kueueVisibility), "protocol": "TCP",
				"targetPort": int64(kueueVisibility)}},
		},
	}}
	apiSvc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": kueueVisibilityAPI},
		"spec": map[string]any{
			"group": "visibility.kueue.x-k8s.io", "version": "v1beta2",
			"groupPriorityMinimum": int64(100), "versionPriority": int64(100),
			// The visibility server has a self-signed certificate
			// (upstream Kueue registers it the same way).
			"insecureSkipTLSVerify": true,
			"service":               map[string]any{"name": "visibility-server", "namespace": kueueNamespace, "port": int64(kueueVisibility)},
		},
	}}
	return []*unstructured.Unstructured{svc, apiSvc}
}

func (a *applier) applyUnstructured(ctx context.Context, objs ...*unstructured.Unstructured) error {
	for _, o := range objs {
		if err := a.applyOne(ctx, o); err != nil {
			return err
		}
	}
	return nil
}

func kueueReady(ctx context.Context, s *Stack) error {
	if err := httpOK(ctx, fmt.Sprintf("http://127.0.0.1:%d/readyz", kueueHealthPort)); err != nil {
		return fmt.Errorf("kueue readyz: %w", err)
	}
	// Only whether the webhook server answers TLS matters here.
	d := &tls.Dialer{Config: &tls.Config{InsecureSkipVerify: true}}
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", fmt.Sprint(kueueWebhookPort)))
	if err != nil {
		return fmt.Errorf("kueue webhook: %w", err)
	}
	_ = conn.Close()
	cfg, err := RESTConfig(s.layout)
	if err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	body, err := kube.Discovery().RESTClient().Get().AbsPath("/apis/visibility.kueue.x-k8s.io/v1beta2").DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("kueue visibility API: %w (%s)", err, strings.TrimSpace(string(body)))
	}
	return nil
}

var crdGVK = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}

// waitCRDsEstablished waits until every CRD of the group is served.
func waitCRDsEstablished(ctx context.Context, a *applier, group string) error {
	crds, err := a.resource(crdGVK, "")
	if err != nil {
		return err
	}
	return waitFor(ctx, group+" CRDs established", 60*time.Second, nil, func(ctx context.Context) error {
		list, err := crds.List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, c := range list.Items {
			if g, _, _ := unstructured.NestedString(c.Object, "spec", "group"); g != group {
				continue
			}
			conds, _, _ := unstructured.NestedSlice(c.Object, "status", "conditions")
			ok := false
			for _, cond := range conds {
				m := cond.(map[string]any)
				if m["type"] == "Established" && m["status"] == "True" {
					ok = true
				}
			}
			if !ok {
				return fmt.Errorf("CRD %s not established yet", c.GetName())
			}
		}
		return nil
	})
}
