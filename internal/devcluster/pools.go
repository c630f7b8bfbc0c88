package devcluster

import (
	"fmt"
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/yaml"

	"github.com/gantry-dev/gantry/internal/naming"
)

// kwokNodeAnnotation marks the nodes kwok simulates.
const kwokNodeAnnotation = "kwok.x-k8s.io/node"

// Pool is one node pool of deploy/local/pools.yaml; its name is also the
// name of its Kueue ResourceFlavor.
type Pool struct {
	Name        string                         `json:"name"`
	Description string                         `json:"description,omitempty"`
	Nodes       int                            `json:"nodes"`
	Labels      map[string]string              `json:"labels,omitempty"`
	Taints      []corev1.Taint                 `json:"taints,omitempty"`
	Capacity    map[corev1.ResourceName]string `json:"capacity"`
}

type poolsFile struct {
	Pools []Pool `json:"pools"`
}

// LoadPools reads the node pools file.
func LoadPools(path string) ([]Pool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read pools: %w", err)
	}
	var f poolsFile
	if err := yaml.UnmarshalStrict(b, &f); err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	seen := map[string]bool{}
	for _, p := range f.Pools {
		if p.Name == "" || seen[p.Name] {
			return nil, fmt.Errorf("parse %s: pool names must be unique and not empty (%q)", path, p.Name)
		}
		seen[p.Name] = true
		if _, err := p.capacity(); err != nil {
			return nil, fmt.Errorf("parse %s: %w", path, err)
		}
	}
	return f.Pools, nil
}

func (p Pool) capacity() (corev1.ResourceList, error) {
	rl := corev1.ResourceList{}
	for name, v := range p.Capacity {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return nil, fmt.Errorf("pool %s: capacity %s: %w", p.Name, name, err)
		}
		rl[name] = q
	}
	return rl, nil
}

// NodeNames are the names of the pool's simulated nodes.
func (p Pool) NodeNames() []string {
	names := make([]string, p.Nodes)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%d", p.Name, i)
	}
	return names
}

// GPUResources are the pool's accelerator resources (whole GPUs or MIG
// slices) with their count per node.
func (p Pool) GPUResources() map[corev1.ResourceName]string {
	out := map[corev1.ResourceName]string{}
	for name, v := range p.Capacity {
		if isAcceleratorResource(name) {
			out[name] = v
		}
	}
	return out
}

func isAcceleratorResource(name corev1.ResourceName) bool {
	return strings.HasPrefix(string(name), "nvidia.com/")
}

// nodes are the kwok-simulated Node objects of the pool.
func (p Pool) nodes() []*corev1.Node {
	capacity, _ := p.capacity()
	var out []*corev1.Node
	for _, name := range p.NodeNames() {
		labels := map[string]string{
			naming.LabelPool:         p.Name,
			"kubernetes.io/hostname": name,
			"kubernetes.io/os":       "linux",
			"kubernetes.io/arch":     "amd64",
			"type":                   "kwok",
		}
		for k, v := range p.Labels {
			labels[k] = v
		}
		out = append(out, &corev1.Node{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
			ObjectMeta: metav1.ObjectMeta{
				Name:        name,
				Labels:      labels,
				Annotations: map[string]string{kwokNodeAnnotation: "fake"},
			},
			Spec: corev1.NodeSpec{Taints: p.Taints},
			Status: corev1.NodeStatus{
				Capacity:    capacity.DeepCopy(),
				Allocatable: capacity.DeepCopy(),
				Phase:       corev1.NodeRunning,
			},
		})
	}
	return out
}

// ResourceFlavor is the pool's Kueue flavor: it pins admitted pods to the
// pool's nodes and tolerates the pool's taints.
func (p Pool) ResourceFlavor() *kueue.ResourceFlavor {
	var tols []corev1.Toleration
	for _, t := range p.Taints {
		tols = append(tols, corev1.Toleration{Key: t.Key, Operator: corev1.TolerationOpEqual, Value: t.Value, Effect: t.Effect})
	}
	return &kueue.ResourceFlavor{
		TypeMeta: metav1.TypeMeta{APIVersion: kueue.GroupVersion.String(), Kind: "ResourceFlavor"},
		ObjectMeta: metav1.ObjectMeta{
			Name:   p.Name,
			Labels: map[string]string{naming.LabelPartOf: naming.PartOf},
		},
		Spec: kueue.ResourceFlavorSpec{
			NodeLabels:  map[string]string{naming.LabelPool: p.Name},
			Tolerations: tols,
		},
	}
}
