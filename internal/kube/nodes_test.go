package kube

import (
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

func gpuNode(name, pool string, gpus int64) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"pool": pool}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(gpus, resource.DecimalSI)}}}
}

// A pool's figures follow its nodes (added, relabelled, resized, deleted)
// while the heartbeats in between reuse the sum.
func TestFlavorCapacityFollowsNodeChanges(t *testing.T) {
	ctx := t.Context()
	client := fake.NewClientset(gpuNode("a", "h100", 8), gpuNode("b", "h100", 8), gpuNode("c", "a100", 4))
	c := NewNodeCache(client, 0)
	c.Start(ctx)
	require.NoError(t, c.WaitForSync(ctx))
	rf := &kueue.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: "h100"}, Spec: kueue.ResourceFlavorSpec{NodeLabels: map[string]string{"pool": "h100"}}}

	gpus := func() int64 {
		capacity, err := c.FlavorCapacity(rf)
		require.NoError(t, err)
		q := capacity["nvidia.com/gpu"]
		return q.Value()
	}
	nodes := func() []string {
		n, err := c.FlavorNodes(rf)
		require.NoError(t, err)
		return n
	}
	assert.Equal(t, int64(16), gpus())
	assert.Equal(t, []string{"a", "b"}, nodes())

	// A caller changing what it got does not change the pool.
	capacity, err := c.FlavorCapacity(rf)
	require.NoError(t, err)
	capacity["nvidia.com/gpu"] = resource.MustParse("1")
	assert.Equal(t, int64(16), gpus())

	heartbeat := gpuNode("a", "h100", 8)
	heartbeat.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now()}}
	_, err = client.CoreV1().Nodes().UpdateStatus(ctx, heartbeat, metav1.UpdateOptions{})
	require.NoError(t, err)
	version := c.version.Load()

	_, err = client.CoreV1().Nodes().Create(ctx, gpuNode("d", "h100", 8), metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return gpus() == 24 }, 10*time.Second, 10*time.Millisecond, "a new node joins its pool")
	assert.Equal(t, []string{"a", "b", "d"}, nodes())
	assert.Greater(t, c.version.Load(), version)

	_, err = client.CoreV1().Nodes().UpdateStatus(ctx, gpuNode("b", "h100", 4), metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return gpus() == 20 }, 10*time.Second, 10*time.Millisecond, "a resized node counts its new allocatable")

	_, err = client.CoreV1().Nodes().Update(ctx, gpuNode("c", "h100", 4), metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return gpus() == 24 }, 10*time.Second, 10*time.Millisecond, "a relabelled node moves pools")

	require.NoError(t, client.CoreV1().Nodes().Delete(ctx, "a", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool { return gpus() == 16 }, 10*time.Second, 10*time.Millisecond, "a deleted node leaves its pool")
	assert.Equal(t, []string{"b", "c", "d"}, nodes())
}

// A heartbeat (status conditions only) does not make the next view sum
// every node again.
func TestNodeHeartbeatKeepsThePoolSum(t *testing.T) {
	ctx := t.Context()
	client := fake.NewClientset(gpuNode("a", "h100", 8))
	c := NewNodeCache(client, 0)
	c.Start(ctx)
	require.NoError(t, c.WaitForSync(ctx))
	require.Eventually(t, func() bool { return c.version.Load() == 1 }, 10*time.Second, 10*time.Millisecond)
	for range 5 {
		n := gpuNode("a", "h100", 8)
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now()}}
		_, err := client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	_, err := client.CoreV1().Nodes().Create(ctx, gpuNode("z", "other", 1), metav1.CreateOptions{})
	require.NoError(t, err)
	// The handler sees events in order: once z's add is counted, the
	// heartbeats before it were seen and did not count.
	require.Eventually(t, func() bool { return c.version.Load() >= 2 }, 10*time.Second, 10*time.Millisecond)
	assert.Equal(t, uint64(2), c.version.Load())
}

// A pool's nodes differ in their labels only by the hostname, which is
// their name: the cache keeps one map of labels for the pool, and a
// flavor that selects nodes by hostname still finds them.
func TestPoolNodesShareTheirLabelsAndStillMatchByHostname(t *testing.T) {
	ctx := t.Context()
	node := func(name, host string) *corev1.Node {
		n := gpuNode(name, "h100", 8)
		n.Labels["kubernetes.io/hostname"] = host
		n.Labels["type"] = "kwok"
		return n
	}
	client := fake.NewClientset(node("gpu-1", "gpu-1"), node("gpu-2", "gpu-2"), node("gpu-3", "metal-3"))
	c := NewNodeCache(client, 0)
	c.Start(ctx)
	require.NoError(t, c.WaitForSync(ctx))

	cached := func(name string) *corev1.Node {
		n, err := c.lister.Get(name)
		require.NoError(t, err)
		return n
	}
	assert.Equal(t, reflect.ValueOf(cached("gpu-1").Labels).UnsafePointer(), reflect.ValueOf(cached("gpu-2").Labels).UnsafePointer(),
		"one map for the pool's nodes")
	assert.Equal(t, "metal-3", nodeLabels{cached("gpu-3")}.Get("kubernetes.io/hostname"), "a hostname other than the name is kept")

	flavorNodes := func(labels map[string]string) []string {
		rf := &kueue.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: "f"}, Spec: kueue.ResourceFlavorSpec{NodeLabels: labels}}
		nodes, err := c.FlavorNodes(rf)
		require.NoError(t, err)
		return nodes
	}
	assert.Equal(t, []string{"gpu-1", "gpu-2", "gpu-3"}, flavorNodes(map[string]string{"pool": "h100", "type": "kwok"}))
	assert.Equal(t, []string{"gpu-2"}, flavorNodes(map[string]string{"kubernetes.io/hostname": "gpu-2"}))
	assert.Equal(t, []string{"gpu-3"}, flavorNodes(map[string]string{"kubernetes.io/hostname": "metal-3"}))
	assert.Empty(t, flavorNodes(map[string]string{"kubernetes.io/hostname": "gpu-3"}))
}
