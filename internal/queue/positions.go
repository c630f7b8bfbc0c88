package queue

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	visibility "sigs.k8s.io/kueue/apis/visibility/v1beta2"
	kueueclient "sigs.k8s.io/kueue/client-go/clientset/versioned"

	"github.com/gantry-dev/gantry/internal/kube"
)

// VisibilityPositions asks Kueue's visibility API for pending positions.
// Kueue answers from its in-memory queues, so this is no cluster list.
type VisibilityPositions struct {
	Client kueueclient.Interface
}

// LocalQueuePending returns the LocalQueue's pending workloads in order.
func (v VisibilityPositions) LocalQueuePending(ctx context.Context, namespace, localQueue string) ([]visibility.PendingWorkload, error) {
	s, err := v.Client.VisibilityV1beta2().LocalQueues(namespace).GetPendingWorkloadsSummary(ctx, localQueue, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("pending workloads of %s/%s: %w", namespace, localQueue, kube.MapError(err))
	}
	return s.Items, nil
}
