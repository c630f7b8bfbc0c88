package reclaim

import (
	"context"
	"fmt"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/gantry-dev/gantry/internal/kube"
	"github.com/gantry-dev/gantry/internal/naming"
)

// KubeScaler scales workloads with the portal's own client: the reclaim
// acts on behalf of the admins' policy, not of a person. Each change
// writes the idle episode it carries out on the object in the same update
// as the replicas (a compare-and-set on its resourceVersion) and is
// skipped when the object already carries that episode, so a leader
// redoing a stop or scale-down that a dead leader already applied changes
// nothing, even when the owner scaled the job up again in between.
type KubeScaler struct {
	Client kubernetes.Interface
}

// ScaleStatefulSet sets a StatefulSet's replicas for an episode (a
// notebook's 0 keeps its claim); false when the episode was applied already.
func (k KubeScaler) ScaleStatefulSet(ctx context.Context, namespace, name string, replicas int32, episode int64) (bool, error) {
	sts := k.Client.AppsV1().StatefulSets(namespace)
	changed, err := applyOnce(episode, func() (*metav1.ObjectMeta, func() error, error) {
		o, err := sts.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, nil, err
		}
		return &o.ObjectMeta, func() error {
			o.Spec.Replicas = &replicas
			_, err := sts.Update(ctx, o, metav1.UpdateOptions{FieldManager: naming.FieldManager})
			return err
		}, nil
	})
	if err != nil {
		return false, fmt.Errorf("scale StatefulSet %s/%s to %d: %w", namespace, name, replicas, kube.MapError(err))
	}
	return changed, nil
}

// ScaleDeployment sets a Deployment's replicas for an episode; false when
// the episode was applied already.
func (k KubeScaler) ScaleDeployment(ctx context.Context, namespace, name string, replicas int32, episode int64) (bool, error) {
	deps := k.Client.AppsV1().Deployments(namespace)
	changed, err := applyOnce(episode, func() (*metav1.ObjectMeta, func() error, error) {
		o, err := deps.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, nil, err
		}
		return &o.ObjectMeta, func() error {
			o.Spec.Replicas = &replicas
			_, err := deps.Update(ctx, o, metav1.UpdateOptions{FieldManager: naming.FieldManager})
			return err
		}, nil
	})
	if err != nil {
		return false, fmt.Errorf("scale Deployment %s/%s to %d: %w", namespace, name, replicas, kube.MapError(err))
	}
	return changed, nil
}

// applyOnce reads the object (get returns its metadata and the update to
// make), and unless it carries the episode, marks it and updates it,
// reading again after a conflict.
func applyOnce(episode int64, get func() (*metav1.ObjectMeta, func() error, error)) (bool, error) {
	mark := strconv.FormatInt(episode, 10)
	changed := false
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		meta, update, err := get()
		if err != nil {
			return err
		}
		if meta.Annotations[naming.AnnotationIdleEpisode] == mark {
			changed = false
			return nil
		}
		if meta.Annotations == nil {
			meta.Annotations = map[string]string{}
		}
		meta.Annotations[naming.AnnotationIdleEpisode] = mark
		changed = true
		return update()
	})
	return changed, err
}

// appliedTo reports whether the object (as the cache last saw it) carries
// the episode.
func appliedTo(meta metav1.ObjectMeta, episode int64) bool {
	return meta.Annotations[naming.AnnotationIdleEpisode] == strconv.FormatInt(episode, 10)
}
