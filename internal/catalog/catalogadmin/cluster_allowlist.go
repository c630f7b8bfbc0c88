package catalogadmin

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gantry-dev/gantry/internal/kube"
	"github.com/gantry-dev/gantry/internal/naming"
)

// ClusterAllowlist is the copy of the image allowlist that the cluster's
// admission policy enforces, so kubectl obeys the admins' list too.
type ClusterAllowlist interface {
	// Apply replaces the cluster's copy with registries.
	Apply(ctx context.Context, registries []string) error
}

// ConfigMapAllowlist writes the allowlist into a ConfigMap with the
// portal's own credentials (server-side apply, field manager "gantry").
type ConfigMapAllowlist struct {
	Client    kubernetes.Interface
	Namespace string
}

// Apply writes registries, one per line, to the ConfigMap's data key.
func (c ConfigMapAllowlist) Apply(ctx context.Context, registries []string) error {
	cm := corev1ac.ConfigMap(naming.AllowlistConfigMap, c.Namespace).
		WithLabels(map[string]string{naming.LabelPartOf: naming.PartOf, naming.LabelManagedBy: naming.ManagedBy}).
		WithData(map[string]string{naming.AllowlistKey: strings.Join(registries, "\n")})
	_, err := c.Client.CoreV1().ConfigMaps(c.Namespace).Apply(ctx, cm, metav1.ApplyOptions{FieldManager: naming.FieldManager, Force: true})
	if err != nil {
		return fmt.Errorf("apply ConfigMap %s/%s: %w", c.Namespace, naming.AllowlistConfigMap, kube.MapError(err))
	}
	return nil
}

// ClusterSyncError says the allowlist was saved in the portal but the
// cluster's copy was not updated; the portal's own checks already use the
// new list, and the next save or start-up writes the cluster's copy again.
type ClusterSyncError struct {
	Registries []string
	Err        error
}

// Error is a sentence for the admin.
func (e *ClusterSyncError) Error() string {
	return "The allowlist was saved and Gantry's own checks use it now, but the cluster's copy (which kubectl is held to) " +
		"could not be updated; save again, or restart Gantry, to retry."
}

// Unwrap returns the cause.
func (e *ClusterSyncError) Unwrap() error { return e.Err }

// SyncClusterAllowlist writes the stored allowlist to the cluster, so a
// fresh cluster gets it and a failed write on save is repaired at start.
func (a *Admin) SyncClusterAllowlist(ctx context.Context) error {
	if a.Cluster == nil {
		return nil
	}
	regs, err := a.Store.ImageRegistries(ctx)
	if err != nil {
		return err
	}
	if err := a.Cluster.Apply(ctx, regs); err != nil {
		return fmt.Errorf("sync image allowlist to the cluster: %w", err)
	}
	return nil
}
