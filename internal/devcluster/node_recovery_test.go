package devcluster_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gantry-dev/gantry/internal/devcluster/stacktest"
	"github.com/gantry-dev/gantry/internal/naming"
)

// A simulated node that was NotReady for a while (a simulated outage, or a
// lease renewed late on a busy machine) keeps its addresses when kwok
// initializes it again: without them the API server cannot reach the logs
// of the pods on it ("no preferred addresses found").
func TestSimulatedNodeKeepsItsAddressesThroughANotReadySpell(t *testing.T) {
	env := stacktest.Stack(t)
	ctx := context.Background()
	node := env.TestNode(t, "recovers", cpuPool)
	addresses := func(c *assert.CollectT) {
		cur, err := env.Kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		require.NoError(c, err)
		got := map[corev1.NodeAddressType]string{}
		for _, a := range cur.Status.Addresses {
			got[a.Type] = a.Address
		}
		assert.Equal(c, map[corev1.NodeAddressType]string{corev1.NodeInternalIP: "127.0.0.1", corev1.NodeHostName: node}, got)
		assert.Equal(c, corev1.ConditionTrue, readyOf(cur), "Ready")
	}
	require.EventuallyWithT(t, addresses, 30*time.Second, 250*time.Millisecond, "a new node gets its addresses")

	annotate := func(value any) {
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{naming.AnnotationSimulateNodeNotReady: value}}})
		require.NoError(t, err)
		_, err = env.Kube.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{})
		require.NoError(t, err)
	}
	annotate("container runtime is down")
	require.Eventually(t, func() bool {
		cur, err := env.Kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		return err == nil && readyOf(cur) == corev1.ConditionFalse
	}, 30*time.Second, 250*time.Millisecond, "kwok reports the node NotReady")
	annotate(nil)
	require.EventuallyWithT(t, addresses, 30*time.Second, 250*time.Millisecond, "Ready again, with both addresses")
}

func readyOf(n *corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return corev1.ConditionUnknown
}
