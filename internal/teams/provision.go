package teams

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	kueueclient "sigs.k8s.io/kueue/client-go/clientset/versioned"

	"github.com/gantry-dev/gantry/internal/identity"
	"github.com/gantry-dev/gantry/internal/naming"
)

// resources maps the kinds of team objects to their API resources, so
// applying needs no discovery.
var resources = map[string]schema.GroupVersionResource{
	"Namespace":     {Version: "v1", Resource: "namespaces"},
	"ResourceQuota": {Version: "v1", Resource: "resourcequotas"},
	"RoleBinding":   {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"},
	"NetworkPolicy": {Group: "networking.k8s.io", Version: "v1", Resource: "networkpolicies"},
	"ClusterQueue":  {Group: kueue.GroupVersion.Group, Version: kueue.GroupVersion.Version, Resource: "clusterqueues"},
	"LocalQueue":    {Group: kueue.GroupVersion.Group, Version: kueue.GroupVersion.Version, Resource: "localqueues"},
}

// Provisioner writes team objects to the cluster with the portal's own
// credentials (ClusterQueues are cluster-scoped; no team role may touch them).
type Provisioner struct {
	dyn   dynamic.Interface
	kube  kubernetes.Interface
	kueue kueueclient.Interface
	// fieldManager names the server-side apply owner; naming.FieldManager by default.
	fieldManager string
	// adminGroups and portalNamespace fill the Spec fields of that name
	// where a team leaves them empty: they are the installation's.
	adminGroups     []string
	portalNamespace string
	// identities fill Spec.Identities where a team leaves it zero.
	identities identity.Prefixes
}

// ProvisionerOption sets what every team of the installation shares.
type ProvisionerOption func(*Provisioner)

// WithAdminGroups binds the admin IdP groups to naming.AdminRole in every team
// namespace the provisioner applies.
func WithAdminGroups(groups []string) ProvisionerOption {
	return func(p *Provisioner) { p.adminGroups = slices.Clone(groups) }
}

// WithPortalNamespace names the namespace of the portal's pods, which every
// team's NetworkPolicy admits.
func WithPortalNamespace(namespace string) ProvisionerOption {
	return func(p *Provisioner) { p.portalNamespace = namespace }
}

// WithIdentities sets the prefixes of the IdP groups team RoleBindings
// bind, equal to those the portal impersonates with.
func WithIdentities(names identity.Prefixes) ProvisionerOption {
	return func(p *Provisioner) { p.identities = names }
}

// NewProvisioner builds a provisioner for cfg. fieldManager may be empty.
func NewProvisioner(cfg *rest.Config, fieldManager string, opts ...ProvisionerOption) (*Provisioner, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("teams: dynamic client: %w", err)
	}
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("teams: kubernetes client: %w", err)
	}
	qc, err := kueueclient.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("teams: kueue client: %w", err)
	}
	if fieldManager == "" {
		fieldManager = naming.FieldManager
	}
	p := &Provisioner{dyn: dyn, kube: kc, kueue: qc, fieldManager: fieldManager}
	for _, o := range opts {
		o(p)
	}
	return p, nil
}

// ApplyOptions change how Apply treats existing objects.
type ApplyOptions struct {
	// KeepQuota keeps the quota lines of an existing ClusterQueue (the
	// grants applied to it) instead of resetting them to Spec.Quotas.
	KeepQuota bool
}

// Apply creates or updates the team's objects with server-side apply; it is
// idempotent. If the team did not exist before and a step fails, what was
// created is deleted again, so a failed create leaves nothing behind.
func (p *Provisioner) Apply(ctx context.Context, t Spec, cohort string, flavors []Flavor, opts ApplyOptions) error {
	if len(t.AdminGroups) == 0 {
		t.AdminGroups = p.adminGroups
	}
	if t.PortalNamespace == "" {
		t.PortalNamespace = p.portalNamespace
	}
	if t.Identities == (identity.Prefixes{}) {
		t.Identities = p.identities
	}
	objs, err := Objects(t, cohort, flavors)
	if err != nil {
		return err
	}
	existing, err := p.kueue.KueueV1beta2().ClusterQueues().Get(ctx, t.ClusterQueue(), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		existing = nil
	case err != nil:
		return fmt.Errorf("apply team %s: get ClusterQueue: %w", t.Name, err)
	}
	_, nsErr := p.kube.CoreV1().Namespaces().Get(ctx, t.Namespace(), metav1.GetOptions{})
	if nsErr != nil && !apierrors.IsNotFound(nsErr) {
		return fmt.Errorf("apply team %s: get namespace: %w", t.Name, nsErr)
	}
	fresh := existing == nil && apierrors.IsNotFound(nsErr)
	if opts.KeepQuota && existing != nil {
		keepQuota(objs, existing)
	}
	for _, o := range objs {
		if err := p.apply(ctx, o); err != nil {
			err = fmt.Errorf("apply team %s: %w", t.Name, err)
			if fresh {
				if derr := p.Delete(ctx, t.Name); derr != nil {
					return errors.Join(err, fmt.Errorf("clean up after failed create: %w", derr))
				}
			}
			return err
		}
	}
	return nil
}

func (p *Provisioner) apply(ctx context.Context, obj runtime.Object) error {
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return fmt.Errorf("convert %T: %w", obj, err)
	}
	u := &unstructured.Unstructured{Object: raw}
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "status")
	gvr, ok := resources[u.GetKind()]
	if !ok {
		return fmt.Errorf("apply %s %s: unknown kind", u.GetKind(), u.GetName())
	}
	var ri dynamic.ResourceInterface = p.dyn.Resource(gvr)
	if ns := u.GetNamespace(); ns != "" {
		ri = p.dyn.Resource(gvr).Namespace(ns)
	}
	if _, err := ri.Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: p.fieldManager, Force: true}); err != nil {
		return fmt.Errorf("apply %s %s: %w", u.GetKind(), u.GetName(), err)
	}
	return nil
}

// Delete deletes the team's namespace (and so everything in it) and its
// ClusterQueue. Missing objects are not an error.
func (p *Provisioner) Delete(ctx context.Context, team string) error {
	if err := p.kube.CoreV1().Namespaces().Delete(ctx, naming.Namespace(team), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete namespace %s: %w", naming.Namespace(team), err)
	}
	if err := p.kueue.KueueV1beta2().ClusterQueues().Delete(ctx, naming.ClusterQueue(team), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete ClusterQueue %s: %w", naming.ClusterQueue(team), err)
	}
	return nil
}

// Hold stops (hold=true) or resumes admission of new workloads for the
// team: stopPolicy Hold on its ClusterQueue and LocalQueue. Kueue keeps
// admitted workloads running (Hold, not HoldAndDrain), so work finishes.
func (p *Provisioner) Hold(ctx context.Context, team string, hold bool) error {
	policy := kueue.None
	if hold {
		policy = kueue.Hold
	}
	cqs := p.kueue.KueueV1beta2().ClusterQueues()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cq, err := cqs.Get(ctx, naming.ClusterQueue(team), metav1.GetOptions{})
		if err != nil {
			return err
		}
		cq.Spec.StopPolicy = &policy
		_, err = cqs.Update(ctx, cq, metav1.UpdateOptions{FieldManager: p.fieldManager})
		return err
	})
	if err != nil {
		return fmt.Errorf("set stop policy of ClusterQueue %s: %w", naming.ClusterQueue(team), err)
	}
	lqs := p.kueue.KueueV1beta2().LocalQueues(naming.Namespace(team))
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		lq, err := lqs.Get(ctx, naming.LocalQueue, metav1.GetOptions{})
		if err != nil {
			return err
		}
		lq.Spec.StopPolicy = &policy
		_, err = lqs.Update(ctx, lq, metav1.UpdateOptions{FieldManager: p.fieldManager})
		return err
	})
	if err != nil {
		return fmt.Errorf("set stop policy of LocalQueue %s/%s: %w", naming.Namespace(team), naming.LocalQueue, err)
	}
	return nil
}

// SyncResourceQuota makes the namespace's ResourceQuota follow the
// ClusterQueue's quota lines.
func SyncResourceQuota(ctx context.Context, kc kubernetes.Interface, cq *kueue.ClusterQueue, namespace string) error {
	want := ResourceQuota(cq, namespace)
	rqs := kc.CoreV1().ResourceQuotas(namespace)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := rqs.Get(ctx, naming.ResourceQuota, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			want.TypeMeta = metav1.TypeMeta{}
			_, err = rqs.Create(ctx, want, metav1.CreateOptions{FieldManager: naming.FieldManager})
			return err
		}
		if err != nil {
			return err
		}
		cur.Spec.Hard = want.Spec.Hard
		_, err = rqs.Update(ctx, cur, metav1.UpdateOptions{FieldManager: naming.FieldManager})
		return err
	})
	if err != nil {
		return fmt.Errorf("sync ResourceQuota %s/%s: %w", namespace, naming.ResourceQuota, err)
	}
	return nil
}

// keepQuota copies the existing ClusterQueue's quota lines and stop policy
// into the objects to apply, and recomputes the ResourceQuota from them.
func keepQuota(objs []runtime.Object, existing *kueue.ClusterQueue) {
	var cq *kueue.ClusterQueue
	for _, o := range objs {
		if v, ok := o.(*kueue.ClusterQueue); ok {
			v.Spec.ResourceGroups = existing.Spec.ResourceGroups
			v.Spec.StopPolicy = existing.Spec.StopPolicy
			cq = v
		}
	}
	for i, o := range objs {
		if v, ok := o.(*corev1.ResourceQuota); ok && cq != nil {
			objs[i] = ResourceQuota(cq, v.Namespace)
		}
	}
}
