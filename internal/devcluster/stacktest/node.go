package stacktest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/gantry/internal/naming"
)

// TestNodeTaint keeps every pod but the test's off a TestNode.
const TestNodeTaint = "gantry.dev/test-node"

// TestNode creates a simulated (kwok) node of pool named prefix-<random>,
// tainted TestNodeTaint so that only pods tolerating it go there (select
// it with kubernetes.io/hostname), and deletes it when the test ends.
func (e *Env) TestNode(t testing.TB, prefix, pool string) string {
	t.Helper()
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	name := prefix + "-" + hex.EncodeToString(b)
	capacity := corev1.ResourceList{"cpu": resource.MustParse("4"), "memory": resource.MustParse("16Gi"), "pods": resource.MustParse("10")}
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
			Labels: map[string]string{naming.LabelPool: pool, "kubernetes.io/hostname": name, "type": "kwok"}},
		Spec:   corev1.NodeSpec{Taints: []corev1.Taint{{Key: TestNodeTaint, Value: name, Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
	}
	if _, err := e.Kube.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
		t.Fatalf("stacktest: create node %s: %v", name, err)
	}
	t.Cleanup(func() {
		err := e.Kube.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("stacktest: delete node %s: %v", name, err)
		}
	})
	return name
}
