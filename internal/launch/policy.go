package launch

import (
	"github.com/gantry-dev/gantry/internal/catalog"
	"github.com/gantry-dev/gantry/internal/policy"
)

// PolicyLaunch is what policy checks of a launch rendered from t with v:
// policy and catalog do not import each other, and this is where the one
// is read as the other.
func PolicyLaunch(t *catalog.Template, v catalog.Values, out catalog.Rendered) policy.Launch {
	p := t.Parameters
	objs := make([]policy.Object, 0, len(out.Objects))
	for _, o := range out.Objects {
		objs = append(objs, o)
	}
	return policy.Launch{
		Image:   t.Image,
		GPUsMin: p.GPUs.Min, GPUsMax: p.GPUs.Max,
		CPU:     policy.Range{Min: p.CPU.Min, Max: p.CPU.Max},
		Memory:  policy.Range{Min: p.Memory.Min, Max: p.Memory.Max},
		Objects: objs,
		Pool:    out.Pool, Pods: out.Pods, GPUResource: out.GPUResource, GPUsPerPod: out.GPUsPerPod,
		CPUPerPod: v.CPU, MemoryPerPod: v.Memory,
		Replicas: v.Replicas,
	}
}
