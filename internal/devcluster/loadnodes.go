package devcluster

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// SimulatedNodes are n more kwok nodes of the pool, named <prefix>-<i>, with
// the pool's labels, taints and capacity: load runs add them to the running
// stack (kwok manages every node carrying its annotation) and delete them
// when they end.
func (p Pool) SimulatedNodes(prefix string, n int) []*corev1.Node {
	q := p
	q.Nodes = n
	nodes := q.nodes()
	for i, node := range nodes {
		name := fmt.Sprintf("%s-%d", prefix, i)
		node.Name = name
		node.Labels["kubernetes.io/hostname"] = name
	}
	return nodes
}
