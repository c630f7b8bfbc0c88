// Package policy holds Gantry's workload rules as data and pure checks:
// shared labels, GPU requests equal to limits, the restricted security
// context, no host access, allowlisted images, and resources within the
// template's bounds and the team's quota ceiling. Every violation is a
// sentence a researcher understands, tied to a form field where possible.
// The same rules stand in the cluster as ValidatingAdmissionPolicies
// (deploy/policies).
package policy

import (
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gantry-dev/gantry/internal/naming"
	"github.com/gantry-dev/gantry/internal/problem"
)

// Rules are the admin-controlled parts of policy.
type Rules struct {
	// Registries is the image allowlist: a registry host ("nvcr.io") or a
	// registry path prefix ("docker.io/vllm").
	Registries []string
}

// Ceiling is a team's most of each resource per flavor (pool): nominal
// quota plus borrowing limit from its ClusterQueue.
type Ceiling map[string]corev1.ResourceList

// Object is a rendered Kubernetes object.
type Object interface {
	metav1.Object
	runtime.Object
}

// Range bounds a quantity, as a template writes it ("4", "16Gi").
type Range struct{ Min, Max string }

// Launch is what the rules check of one launch: the template's image and
// per-pod bounds, the sizes asked for, and the objects rendered from them.
type Launch struct {
	// Image is the template's container image.
	Image string
	// GPUsMin and GPUsMax, CPU and Memory are the template's per-pod bounds.
	GPUsMin, GPUsMax int
	CPU, Memory      Range
	// Objects are the rendered objects, the workload last.
	Objects []Object
	// Pool is the node pool the pods run on; Pods how many run at full
	// size, each requesting GPUsPerPod of GPUResource.
	Pool        string
	Pods        int
	GPUResource string
	GPUsPerPod  int
	// CPUPerPod and MemoryPerPod are what each pod asks for.
	CPUPerPod, MemoryPerPod resource.Quantity
	// Replicas is the endpoint's replica count, 0 for other kinds.
	Replicas int
}

// CheckImage explains why an image may not be used, or returns "".
func (r Rules) CheckImage(image string) string {
	if image == "" {
		return "The template has no container image."
	}
	name, digest, hasDigest := strings.Cut(image, "@")
	if hasDigest && !strings.HasPrefix(digest, "sha256:") {
		return fmt.Sprintf("The image %s has a digest that is not sha256.", image)
	}
	repo, tag := name, ""
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		repo, tag = name[:i], name[i+1:]
	}
	if !strings.Contains(repo, "/") || !strings.ContainsAny(strings.SplitN(repo, "/", 2)[0], ".:") {
		return fmt.Sprintf("The image %s does not name its registry; write it in full, like nvcr.io/nvidia/pytorch:24.12-py3.", image)
	}
	if len(r.Registries) == 0 {
		return fmt.Sprintf("The image %s is not allowed: the image registry allowlist is empty. Ask the Gantry admins to add its registry.", image)
	}
	if !slices.ContainsFunc(r.Registries, func(allowed string) bool {
		allowed = strings.TrimSuffix(allowed, "/")
		return repo == allowed || strings.HasPrefix(repo, allowed+"/")
	}) {
		return fmt.Sprintf("The image %s is not from an allowed registry (allowed: %s).", image, strings.Join(r.Registries, ", "))
	}
	if !hasDigest && (tag == "" || tag == "latest") {
		return fmt.Sprintf("The image %s must be pinned to a version tag or a digest, not \"latest\".", image)
	}
	return ""
}

// Check returns every violation in a launch's rendered objects. ceiling may
// be nil when the team's quota is unknown; then the quota is not checked.
func (r Rules) Check(l Launch, ceiling Ceiling) problem.Fields {
	errs := problem.Fields{}
	if msg := r.CheckImage(l.Image); msg != "" {
		errs.Add("", msg)
	}
	for _, obj := range l.Objects {
		what := fmt.Sprintf("%s %s", kindOf(obj), obj.GetName())
		checkLabels(errs, what, obj.GetLabels())
		pod, ok := podSpecOf(obj)
		if !ok {
			continue
		}
		checkLabels(errs, what+"'s pods", pod.Labels)
		r.checkPod(errs, what, &pod.Spec)
		checkBounds(errs, l, &pod.Spec)
	}
	if ceiling != nil {
		checkCeiling(errs, l, ceiling)
	}
	return errs
}

func kindOf(obj Object) string {
	if k := obj.GetObjectKind().GroupVersionKind().Kind; k != "" {
		return k
	}
	return fmt.Sprintf("%T", obj)
}

func podSpecOf(obj Object) (*corev1.PodTemplateSpec, bool) {
	switch o := obj.(type) {
	case *batchv1.Job:
		return &o.Spec.Template, true
	case *appsv1.StatefulSet:
		return &o.Spec.Template, true
	case *appsv1.Deployment:
		return &o.Spec.Template, true
	default:
		return nil, false
	}
}

func checkLabels(errs problem.Fields, what string, labels map[string]string) {
	var missing []string
	for _, k := range naming.SharedLabels() {
		if labels[k] == "" {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		errs.Add("labels:"+what, fmt.Sprintf("The %s is missing the labels Gantry uses for queueing and cost: %s.", what, strings.Join(missing, ", ")))
	}
	if v := labels[naming.LabelManagedBy]; v != "" && v != naming.ManagedBy {
		errs.Add("managed-by:"+what, fmt.Sprintf("The %s must be labelled %s=%s.", what, naming.LabelManagedBy, naming.ManagedBy))
	}
}

func (r Rules) checkPod(errs problem.Fields, what string, spec *corev1.PodSpec) {
	if spec.HostNetwork || spec.HostPID || spec.HostIPC {
		errs.Add("host:"+what, fmt.Sprintf("The %s may not share the node's network, process or IPC namespace.", what))
	}
	for _, vol := range spec.Volumes {
		if vol.HostPath != nil {
			errs.Add("hostpath:"+what, fmt.Sprintf("The %s may not mount a directory of the node (hostPath volume %q).", what, vol.Name))
		}
	}
	podNonRoot := spec.SecurityContext != nil && spec.SecurityContext.RunAsNonRoot != nil && *spec.SecurityContext.RunAsNonRoot
	podSeccomp := spec.SecurityContext != nil && spec.SecurityContext.SeccompProfile != nil &&
		spec.SecurityContext.SeccompProfile.Type == corev1.SeccompProfileTypeRuntimeDefault
	for _, c := range append(slices.Clone(spec.InitContainers), spec.Containers...) {
		cwhat := fmt.Sprintf("container %q of the %s", c.Name, what)
		if msg := r.CheckImage(c.Image); msg != "" {
			errs.Add("image:"+c.Name, msg)
		}
		sc := c.SecurityContext
		if sc == nil {
			sc = &corev1.SecurityContext{}
		}
		if sc.Privileged != nil && *sc.Privileged {
			errs.Add("privileged:"+cwhat, fmt.Sprintf("The %s may not run privileged.", cwhat))
		}
		// A container's own setting overrides the pod's.
		nonRoot := podNonRoot
		if sc.RunAsNonRoot != nil {
			nonRoot = *sc.RunAsNonRoot
		}
		if !nonRoot {
			errs.Add("nonroot:"+cwhat, fmt.Sprintf("The %s must run as a non-root user.", cwhat))
		}
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			errs.Add("escalation:"+cwhat, fmt.Sprintf("The %s must not allow privilege escalation.", cwhat))
		}
		if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") || len(sc.Capabilities.Add) > 0 {
			errs.Add("caps:"+cwhat, fmt.Sprintf("The %s must drop all Linux capabilities and add none.", cwhat))
		}
		if sc.SeccompProfile != nil && sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault || !podSeccomp && sc.SeccompProfile == nil {
			errs.Add("seccomp:"+cwhat, fmt.Sprintf("The %s must use the RuntimeDefault seccomp profile.", cwhat))
		}
		for name, req := range c.Resources.Requests {
			if !isGPU(name) {
				continue
			}
			if lim, ok := c.Resources.Limits[name]; !ok || lim.Cmp(req) != 0 {
				errs.Add(naming.FieldGPUs, fmt.Sprintf("The %s must request exactly as many %s as its limit.", cwhat, name))
			}
		}
		for name := range c.Resources.Limits {
			if _, ok := c.Resources.Requests[name]; isGPU(name) && !ok {
				errs.Add(naming.FieldGPUs, fmt.Sprintf("The %s must request exactly as many %s as its limit.", cwhat, name))
			}
		}
	}
}

func isGPU(name corev1.ResourceName) bool { return strings.HasPrefix(string(name), "nvidia.com/") }

// checkBounds re-checks the rendered pod against the template's ranges, so
// a rendering bug cannot slip past the form's checks.
func checkBounds(errs problem.Fields, l Launch, spec *corev1.PodSpec) {
	for _, c := range spec.Containers {
		if msg := outside(c.Resources.Requests[corev1.ResourceCPU], l.CPU); msg != "" {
			errs.Add(naming.FieldCPU, "The CPU request "+msg)
		}
		if msg := outside(c.Resources.Requests[corev1.ResourceMemory], l.Memory); msg != "" {
			errs.Add(naming.FieldMemory, "The memory request "+msg)
		}
		for name, q := range c.Resources.Requests {
			if isGPU(name) && (q.Value() < int64(l.GPUsMin) || q.Value() > int64(l.GPUsMax)) {
				errs.Add(naming.FieldGPUs, fmt.Sprintf("The template allows %d to %d GPUs per pod; the request is %s.", l.GPUsMin, l.GPUsMax, q.String()))
			}
		}
	}
}

func outside(q resource.Quantity, r Range) string {
	lo, err1 := resource.ParseQuantity(r.Min)
	hi, err2 := resource.ParseQuantity(r.Max)
	if err1 != nil || err2 != nil {
		return "cannot be checked: the template's range is broken."
	}
	if q.Cmp(lo) < 0 || q.Cmp(hi) > 0 {
		return fmt.Sprintf("of %s is outside the template's range of %s to %s.", q.String(), r.Min, r.Max)
	}
	return ""
}

func checkCeiling(errs problem.Fields, l Launch, ceiling Ceiling) {
	limits, ok := ceiling[l.Pool]
	pods := int64(max(l.Pods, 1))
	gpuField := naming.FieldGPUs
	if pods > 1 {
		gpuField = naming.FieldNodes
		if l.Replicas > 0 {
			gpuField = naming.FieldReplicas
		}
	}
	if !ok {
		errs.Add(naming.FieldGPUType, fmt.Sprintf("Your team has no quota on the %s pool. Choose another GPU type or ask your team lead for quota.", l.Pool))
		return
	}
	type need struct {
		field, what string
		name        corev1.ResourceName
		amount      resource.Quantity
	}
	gpus := *resource.NewQuantity(int64(l.GPUsPerPod)*pods, resource.DecimalSI)
	cpu := l.CPUPerPod.DeepCopy()
	mem := l.MemoryPerPod.DeepCopy()
	for range pods - 1 {
		cpu.Add(l.CPUPerPod)
		mem.Add(l.MemoryPerPod)
	}
	for _, n := range []need{
		{gpuField, "GPUs", corev1.ResourceName(l.GPUResource), gpus},
		{naming.FieldCPU, "CPU cores", corev1.ResourceCPU, cpu},
		{naming.FieldMemory, "memory", corev1.ResourceMemory, mem},
	} {
		limit, ok := limits[n.name]
		if !ok {
			limit = resource.Quantity{}
		}
		if n.amount.Cmp(limit) > 0 {
			errs.Add(n.field, fmt.Sprintf("This asks for %s %s on the %s pool in total, but your team can use at most %s there, even borrowing from other teams. Ask for less, or ask your team lead for more quota.",
				n.amount.String(), n.what, l.Pool, limit.String()))
		}
	}
}
