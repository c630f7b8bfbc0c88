package reclaim

import (
	"context"
	"fmt"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gantry-dev/gantry/internal/kube"
)

// KubeScaler scales workloads with the portal's own client: the reclaim
// acts on behalf of the admins' policy, not of a person.
type KubeScaler struct {
	Client kubernetes.Interface
}

func scaleOf(namespace, name string, replicas int32) *autoscalingv1.Scale {
	return &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}, Spec: autoscalingv1.ScaleSpec{Replicas: replicas}}
}

// ScaleStatefulSet sets a StatefulSet's replicas (a notebook's 0 keeps its claim).
func (k KubeScaler) ScaleStatefulSet(ctx context.Context, namespace, name string, replicas int32) error {
	if _, err := k.Client.AppsV1().StatefulSets(namespace).UpdateScale(ctx, name, scaleOf(namespace, name, replicas), metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("scale StatefulSet %s/%s to %d: %w", namespace, name, replicas, kube.MapError(err))
	}
	return nil
}

// ScaleDeployment sets a Deployment's replicas.
func (k KubeScaler) ScaleDeployment(ctx context.Context, namespace, name string, replicas int32) error {
	if _, err := k.Client.AppsV1().Deployments(namespace).UpdateScale(ctx, name, scaleOf(namespace, name, replicas), metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("scale Deployment %s/%s to %d: %w", namespace, name, replicas, kube.MapError(err))
	}
	return nil
}
