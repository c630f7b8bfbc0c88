package devcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// fieldManager owns what the local stack applies.
const fieldManager = "gantry-dev"

// applier applies objects with server-side apply, whatever their kind.
type applier struct {
	dyn    dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

func newApplier(cfg *rest.Config) (*applier, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("discovery client: %w", err)
	}
	return &applier{dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco))}, nil
}

// applier returns an applier for the stack's admin kubeconfig.
func (s *Stack) applier() (*applier, error) {
	cfg, err := RESTConfig(s.layout)
	if err != nil {
		return nil, err
	}
	return newApplier(cfg)
}

// apply server-side applies each object (typed or unstructured; typed ones
// need their TypeMeta set).
func (a *applier) apply(ctx context.Context, objs ...runtime.Object) error {
	for _, obj := range objs {
		u, err := toUnstructured(obj)
		if err != nil {
			return err
		}
		if err := a.applyOne(ctx, u); err != nil {
			return err
		}
	}
	return nil
}

func (a *applier) applyOne(ctx context.Context, u *unstructured.Unstructured) error {
	gvk := u.GroupVersionKind()
	what := fmt.Sprintf("%s %s", gvk.Kind, u.GetName())
	if ns := u.GetNamespace(); ns != "" {
		what = fmt.Sprintf("%s %s/%s", gvk.Kind, ns, u.GetName())
	}
	ri, err := a.resource(gvk, u.GetNamespace())
	if err != nil {
		return fmt.Errorf("apply %s: %w", what, err)
	}
	u.SetManagedFields(nil)
	u.SetResourceVersion("")
	if _, err := ri.Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: fieldManager, Force: true}); err != nil {
		return fmt.Errorf("apply %s: %w", what, err)
	}
	return nil
}

// resource returns the client of a kind.
func (a *applier) resource(gvk schema.GroupVersionKind, namespace string) (dynamic.ResourceInterface, error) {
	m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		// A kind whose CRD was just created: refresh discovery once.
		a.mapper.Reset()
		m, err = a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		return nil, fmt.Errorf("resource of %s: %w", gvk, err)
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return a.dyn.Resource(m.Resource).Namespace(namespace), nil
	}
	return a.dyn.Resource(m.Resource), nil
}

func toUnstructured(obj runtime.Object) (*unstructured.Unstructured, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u, nil
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("convert %T: %w", obj, err)
	}
	u := &unstructured.Unstructured{Object: m}
	if u.GetKind() == "" {
		return nil, fmt.Errorf("convert %T: TypeMeta not set", obj)
	}
	// Typed objects carry empty status and creationTimestamp, which apply
	// would claim ownership of.
	delete(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	return u, nil
}

// readManifests decodes a multi-document YAML file into objects.
func readManifests(path string) ([]*unstructured.Unstructured, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read manifests: %w", err)
	}
	objs, err := decodeManifests(b)
	if err != nil {
		return nil, fmt.Errorf("read manifests %s: %w", path, err)
	}
	return objs, nil
}

func decodeManifests(b []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	var objs []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, err
		}
		if len(m) == 0 {
			continue
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
}

func (a *applier) applyFile(ctx context.Context, path string) error {
	objs, err := readManifests(path)
	if err != nil {
		return err
	}
	for _, u := range objs {
		if err := a.applyOne(ctx, u); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	return nil
}
