package devcluster

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gantry-dev/gantry/internal/config"
	"github.com/gantry-dev/gantry/internal/naming"
)

// bootstrapComponent applies the cluster's shared objects: ClusterRoles,
// WorkloadPriorityClasses, the image allowlist ConfigMap (only if missing), the admission policies of deploy/policies, one
// ResourceFlavor per pool and every team of teams.yaml. Server-side apply makes it cheap to repeat on every up, so
// edits to the data files take effect without a restart.
func bootstrapComponent() component {
	return component{
		name:  "cluster objects",
		group: GroupCluster,
		start: bootstrap,
	}
}

func bootstrap(ctx context.Context, s *Stack) error {
	a, err := s.applier()
	if err != nil {
		return err
	}
	for _, f := range []string{"rbac.yaml", "priorities.yaml"} {
		if err := a.applyFile(ctx, s.layout.Deploy("local", "cluster", f)); err != nil {
			return err
		}
	}
	if err := removeClusterWideAdmins(ctx, a); err != nil {
		return err
	}
	// The image policy fails closed without its allowlist: create it first.
	if err := seedImageAllowlist(ctx, a); err != nil {
		return err
	}
	policies, err := applyPolicies(ctx, a, s.layout.Deploy("policies"))
	if err != nil {
		return err
	}
	pools, err := s.pools()
	if err != nil {
		return err
	}
	var flavors []runtime.Object
	for _, p := range pools {
		flavors = append(flavors, p.ResourceFlavor())
	}
	if err := a.apply(ctx, flavors...); err != nil {
		return err
	}
	teams, err := LoadTeams(s.layout.Deploy("local", "teams.yaml"))
	if err != nil {
		return err
	}
	for _, t := range teams.Teams {
		objs, err := t.Objects(teams.Cohort, pools)
		if err != nil {
			return err
		}
		if err := a.apply(ctx, objs...); err != nil {
			return fmt.Errorf("team %s: %w", t.Name, err)
		}
	}
	if len(teams.Teams) > 0 {
		if err := waitForPolicies(ctx, a, teams.Teams[0].Namespace()); err != nil {
			return err
		}
	}
	s.progress("    %d pools, %d teams in cohort %s, %d admission policy files", len(pools), len(teams.Teams), teams.Cohort, policies)
	return nil
}

// removeClusterWideAdmins deletes the ClusterRoleBinding that once gave the
// admin group gantry-admin in every namespace; admins are bound per team
// namespace now, and apply never deletes what a file no longer has.
func removeClusterWideAdmins(ctx context.Context, a *applier) error {
	gvr := schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"}
	err := a.dyn.Resource(gvr).Delete(ctx, "gantry-admins", metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("remove ClusterRoleBinding gantry-admins: %w", err)
	}
	return nil
}

// seedImageAllowlist creates the system namespace (naming.SystemNamespace,
// GANTRY_SYSTEM_NAMESPACE's default, where the chart runs the portal's
// pods) and, unless it exists,
// the image allowlist ConfigMap with the portal's default list; a running
// portal owns it afterwards, so an up never overwrites what admins saved.
func seedImageAllowlist(ctx context.Context, a *applier) error {
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": naming.SystemNamespace, "labels": map[string]any{naming.LabelPartOf: naming.PartOf}}}}
	if err := a.applyOne(ctx, ns); err != nil {
		return err
	}
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": naming.AllowlistConfigMap, "namespace": naming.SystemNamespace,
			"labels": map[string]any{naming.LabelPartOf: naming.PartOf}},
		"data": map[string]any{naming.AllowlistKey: strings.Join(strings.Split(config.DefaultImageRegistries, ","), "\n")}}}
	_, err := a.dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(naming.SystemNamespace).
		Create(ctx, cm, metav1.CreateOptions{FieldManager: fieldManager})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("image allowlist ConfigMap %s/%s: %w", naming.SystemNamespace, naming.AllowlistConfigMap, err)
	}
	return nil
}

// applyPolicies applies every YAML file of dir (the ValidatingAdmissionPolicies
// and their bindings) and returns how many files it applied.
func applyPolicies(ctx context.Context, a *applier, dir string) (int, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return 0, fmt.Errorf("admission policies: %w", err)
	}
	for _, f := range files {
		if err := a.applyFile(ctx, f); err != nil {
			return 0, fmt.Errorf("admission policies: %w", err)
		}
	}
	return len(files), nil
}

// waitForPolicies waits until the API server enforces the admission
// policies in a team namespace: it takes effect only once the server's
// policy informer has seen the bindings, and the stack is not up before.
// Each probe is a dry run that only one policy objects to.
func waitForPolicies(ctx context.Context, a *applier, namespace string) error {
	// A pod spec Pod Security "restricted" accepts, whatever its image.
	podSpec := func(image string) map[string]any {
		return map[string]any{
			"restartPolicy":   "Never",
			"securityContext": map[string]any{"runAsNonRoot": true, "seccompProfile": map[string]any{"type": "RuntimeDefault"}},
			"containers": []any{map[string]any{
				"name": "probe", "image": image,
				"securityContext": map[string]any{"allowPrivilegeEscalation": false, "capabilities": map[string]any{"drop": []any{"ALL"}}},
			}},
		}
	}
	probes := []struct {
		gvr  schema.GroupVersionResource
		obj  map[string]any
		want string
	}{
		{
			gvr:  schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"},
			obj:  map[string]any{"apiVersion": "batch/v1", "kind": "Job", "metadata": map[string]any{"name": "policy-probe"}, "spec": map[string]any{"suspend": true, "template": map[string]any{"spec": podSpec("nvcr.io/nvidia/pytorch:24.12-py3")}}},
			want: "missing labels",
		},
		{
			gvr:  schema.GroupVersionResource{Version: "v1", Resource: "pods"},
			obj:  map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "policy-probe"}, "spec": podSpec("registry.invalid/probe:1")},
			want: "Images must come from an allowed registry",
		},
	}
	for _, p := range probes {
		err := waitFor(ctx, "admission policies in "+namespace, 30*time.Second, nil, func(ctx context.Context) error {
			_, err := a.dyn.Resource(p.gvr).Namespace(namespace).Create(ctx, &unstructured.Unstructured{Object: p.obj},
				metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if err != nil && strings.Contains(err.Error(), p.want) {
				return nil
			}
			return fmt.Errorf("a dry-run %s was not refused with %q (got %v)", p.obj["kind"], p.want, err)
		})
		if err != nil {
			return err
		}
	}
	return nil
}
