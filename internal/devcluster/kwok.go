package devcluster

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// kwok simulates the GPU nodes and the pods on them.
const (
	procKwok       = "kwok"
	kwokServerPort = 10247
)

// NodeLeaseDuration is the lease kwok holds for each simulated node. Like
// the kubelet, it renews a lease every quarter of its duration
// (NodeLeaseRenewInterval), with 4% jitter: nodes that join in the same
// few seconds keep renewing together for many minutes.
const (
	NodeLeaseDuration      = 40 * time.Second
	NodeLeaseRenewInterval = NodeLeaseDuration / 4
)

// KwokMetricsURL is where kwok serves a node's simulated DCGM metrics.
func KwokMetricsURL(node string) string {
	return kwokServerURL() + dcgmMetricsPath(node)
}

func dcgmMetricsPath(node string) string { return "/metrics/nodes/" + node + "/metrics/dcgm" }

func kwokComponent() component {
	return component{
		name:      "kwok (GPU node pools)",
		group:     GroupCluster,
		processes: []string{procKwok},
		ports:     []int{kwokServerPort},
		healthy: func(ctx context.Context, s *Stack) error {
			if _, err := s.process(procKwok); err != nil {
				return err
			}
			if err := httpOK(ctx, kwokServerURL()+"/healthz"); err != nil {
				return err
			}
			if err := s.nodesReady(ctx); err != nil {
				return err
			}
			// A kwok that serves no Metric path is started again.
			node, err := s.firstNode()
			if err != nil {
				return err
			}
			return kwokMetricsCheck(kwokServerURL(), node, nil, 0)(ctx)
		},
		start: startKwok,
	}
}

func (s *Stack) pools() ([]Pool, error) {
	return LoadPools(s.layout.Deploy("local", "pools.yaml"))
}

func startKwok(ctx context.Context, s *Stack) error {
	cfg, err := RESTConfig(s.layout)
	if err != nil {
		return err
	}
	a, err := newApplier(cfg)
	if err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	// kwok reads its Metric objects when it starts and watches Logs only
	// when their CRDs exist: CRDs and metric first.
	for _, f := range []string{"metric-crd.yaml", "logs-crd.yaml"} {
		if err := a.applyFile(ctx, s.layout.Deploy("local", "kwok", f)); err != nil {
			return err
		}
	}
	if err := waitCRDsEstablished(ctx, a, "kwok.x-k8s.io"); err != nil {
		return err
	}
	// kwok reads a Metric once: a changed one takes effect on its restart.
	if err := a.applyOne(ctx, dcgmMetric()); err != nil {
		return fmt.Errorf("kwok DCGM metric: %w", err)
	}
	if err := a.applyOne(ctx, containerMemoryMetric()); err != nil {
		return fmt.Errorf("kwok container memory metric: %w", err)
	}
	pools, err := s.pools()
	if err != nil {
		return err
	}
	for _, p := range pools {
		for _, n := range p.nodes() {
			if _, err := kube.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("create node %s: %w", n.Name, err)
			}
			// A lease held by an earlier kwok would keep this one off the
			// node until it expires.
			err := kube.CoordinationV1().Leases(corev1.NamespaceNodeLease).Delete(ctx, n.Name, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("delete lease of node %s: %w", n.Name, err)
			}
		}
	}
	ps, err := s.run(Process{
		Name: procKwok,
		Path: s.bin(binKwok),
		Args: []string{
			"--kubeconfig=" + s.componentKubeconfig("kwok"),
			"--config=" + s.layout.Deploy("local", "kwok", "stages.yaml"),
			"--manage-all-nodes=false",
			"--manage-nodes-with-annotation-selector=" + kwokNodeAnnotation + "=fake",
			fmt.Sprintf("--server-address=127.0.0.1:%d", kwokServerPort),
			// Nodes advertise kwok's server as their kubelet, so the API
			// server's pods/log reaches it; it serves HTTPS on the same port.
			"--node-ip=127.0.0.1",
			fmt.Sprintf("--node-port=%d", kwokServerPort),
			"--tls-cert-file=" + filepath.Join(s.layout.PKI(), "kwok-serving.crt"),
			"--tls-private-key-file=" + filepath.Join(s.layout.PKI(), "kwok-serving.key"),
			fmt.Sprintf("--node-lease-duration-seconds=%d", int(NodeLeaseDuration.Seconds())),
			// Pod IPs from the pod network, where the stand-in answers.
			"--cidr=" + kwokCIDR,
			"--enable-crds=Metric,Logs,ClusterLogs",
			// At INFO kwok logs every node heartbeat and, per scrape, each
			// node without pods.
			"--v=ERROR",
		},
	})
	if err != nil {
		return err
	}
	if err := waitFor(ctx, "simulated nodes Ready and schedulable", 90*time.Second, ps, s.nodesReady); err != nil {
		return err
	}
	node, err := s.firstNode()
	if err != nil {
		return err
	}
	return waitFor(ctx, "kwok serving its metrics", 60*time.Second, ps, kwokMetricsCheck(kwokServerURL(), node, touchKwokMetric(a.dyn), kwokRereadEvery))
}

// kwokServerURL is kwok's server: metrics, health, and the nodes' kubelet
// API.
func kwokServerURL() string { return fmt.Sprintf("http://127.0.0.1:%d", kwokServerPort) }

// firstNode is the name of the first pool's first simulated node.
func (s *Stack) firstNode() (string, error) {
	pools, err := s.pools()
	if err != nil {
		return "", err
	}
	for _, p := range pools {
		if names := p.NodeNames(); len(names) > 0 {
			return names[0], nil
		}
	}
	return "", errors.New("no simulated node in deploy/local/pools.yaml")
}

// nodesReady checks that every pool node is Ready and no longer carries the
// not-ready taint (kube-controller-manager lifts it).
func (s *Stack) nodesReady(ctx context.Context) error {
	cfg, err := RESTConfig(s.layout)
	if err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	pools, err := s.pools()
	if err != nil {
		return err
	}
	for _, p := range pools {
		for _, name := range p.NodeNames() {
			n, err := kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("node %s: %w", name, err)
			}
			ready := false
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					ready = true
				}
			}
			if !ready {
				return fmt.Errorf("node %s is not Ready", name)
			}
			for _, t := range n.Spec.Taints {
				if t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable {
					return fmt.Errorf("node %s still has taint %s", name, t.Key)
				}
			}
		}
	}
	return nil
}
