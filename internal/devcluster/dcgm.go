package devcluster

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gantry-dev/gantry/internal/naming"
)

// Memory of the MIG slices the local pools offer, in MiB, as
// dcgm-exporter reports a slice's framebuffer: a 1g.10gb slice never shows
// more than its 10 GB.
var migSlices = []struct {
	resource string
	mib      int
	// sevenths of the board the slice is (its compute and power share).
	sevenths int
}{
	{"nvidia.com/mig-1g.10gb", 9728, 1},
	{"nvidia.com/mig-2g.20gb", 19968, 2},
	{"nvidia.com/mig-3g.40gb", 40192, 3},
	{"nvidia.com/mig-7g.80gb", 80384, 7},
}

// boards are the power figures of the GPU products in pools.yaml (node
// label nvidia.com/gpu.product): the board's power limit and what it
// draws idle, in watts.
var boards = []struct {
	product       string
	limitW, idleW int
}{
	{"NVIDIA-H100-80GB-HBM3", 700, 72},
	{"NVIDIA-A100-SXM4-80GB", 400, 55},
	{"NVIDIA-L40S", 350, 34},
}

// fallbackBoard is used for a product missing from boards.
var fallbackBoard = struct{ limitW, idleW, memMiB int }{300, 40, 81920}

// CEL pieces. kwok evaluates them per container with node, pod and
// container bound (kwok v0.8 CEL environment; pod.SinceSecond() is the
// pod's age). Integers and doubles never mix in CEL arithmetic.
const (
	celAge  = `int(pod.SinceSecond())`
	celSeed = `(size(pod.metadata.name) * 13 + size(pod.metadata.namespace) * 7)`
)

func celHas(m, key string) string { return fmt.Sprintf("%q in %s", key, m) }

func celKind(kind string) string {
	return fmt.Sprintf(`(%s && pod.metadata.labels[%q] == %q)`, celHas("pod.metadata.labels", naming.LabelKind), naming.LabelKind, kind)
}

func celUses(resource string) string {
	return fmt.Sprintf("(%s || %s)", celHas("container.resources.limits", resource), celHas("container.resources.requests", resource))
}

func celClamp(v string) string {
	return fmt.Sprintf("(%[1]s > 100.0 ? 100.0 : (%[1]s < 0.0 ? 0.0 : %[1]s))", v)
}

// celUtilization is a pod's GPU utilization in percent: forced by the
// annotation, else by the kind of workload (label naming.LabelKind).
func celUtilization() string {
	forced := func(key string) string {
		return celClamp(fmt.Sprintf("double(pod.metadata.annotations[%q])", key))
	}
	training := fmt.Sprintf("double(85 + (%s + %s / 15 * 7) %% 11)", celSeed, celAge)
	// A notebook is idle (0-2 %) but for a 45-second burst every 20 minutes.
	notebook := fmt.Sprintf("((%[1]s + %[2]s * 37) %% 1200 < 45 ? double(55 + (%[2]s + %[1]s / 15 * 7) %% 36) : double((%[2]s + %[1]s / 15) %% 3))", celAge, celSeed)
	// An endpoint follows a modest wave of requests: 15-64 % over 15 minutes.
	wave := fmt.Sprintf("((%[1]s + %[2]s * 17) %% 900)", celAge, celSeed)
	inference := fmt.Sprintf("double(15 + (%[1]s < 450 ? %[1]s : 900 - %[1]s) / 10 + (%[2]s + %[3]s / 15 * 3) %% 5)", wave, celSeed, celAge)
	// Pods without a kind (made by tests directly) are busy, 40-95 %.
	other := fmt.Sprintf("double(40 + (size(pod.metadata.name) * 13 + %s / 15 * 7) %% 56)", celAge)
	return fmt.Sprintf("(%s ? %s : (%s ? %s : (%s ? %s : (%s ? %s : (%s ? %s : %s)))))",
		celHas("pod.metadata.annotations", naming.AnnotationSimGPUUtil), forced(naming.AnnotationSimGPUUtil),
		celHas("pod.metadata.annotations", naming.AnnotationSimulateUtilization), forced(naming.AnnotationSimulateUtilization),
		celKind("training"), training,
		celKind("notebook"), notebook,
		celKind("inference"), inference,
		other)
}

// celCapacityMiB is the framebuffer of what the container holds: its MIG
// slice, else a whole GPU of the node (label nvidia.com/gpu.memory).
func celCapacityMiB() string {
	whole := fmt.Sprintf(`(%s ? double(node.metadata.labels["nvidia.com/gpu.memory"]) : %d.0)`,
		celHas("node.metadata.labels", "nvidia.com/gpu.memory"), fallbackBoard.memMiB)
	out := whole
	for i := len(migSlices) - 1; i >= 0; i-- {
		out = fmt.Sprintf("(%s ? %d.0 : %s)", celUses(migSlices[i].resource), migSlices[i].mib, out)
	}
	return out
}

// celShare is the part of the board the container holds: a MIG slice's
// sevenths, else 1.
func celShare() string {
	out := "1.0"
	for i := len(migSlices) - 1; i >= 0; i-- {
		out = fmt.Sprintf("(%s ? %d.0 / 7.0 : %s)", celUses(migSlices[i].resource), migSlices[i].sevenths, out)
	}
	return out
}

func celBoard(pick func(limitW, idleW int) int, fallback int) string {
	product := fmt.Sprintf(`(%s ? node.metadata.labels["nvidia.com/gpu.product"] : "")`, celHas("node.metadata.labels", "nvidia.com/gpu.product"))
	out := fmt.Sprintf("%d.0", fallback)
	for i := len(boards) - 1; i >= 0; i-- {
		out = fmt.Sprintf("(%s == %q ? %d.0 : %s)", product, boards[i].product, pick(boards[i].limitW, boards[i].idleW), out)
	}
	return out
}

// celMemoryUsedMiB: 4 % of the framebuffer (the CUDA context) plus up to
// 90 % more with utilization, so never more than the slice or GPU has.
func celMemoryUsedMiB() string {
	return fmt.Sprintf("(%s * (0.04 + 0.9 * %s / 100.0))", celCapacityMiB(), celUtilization())
}

// celPowerW: idle draw plus up to 95 % of the board's limit with
// utilization and a few watts of noise; a MIG slice draws its share.
func celPowerW() string {
	limit := celBoard(func(l, _ int) int { return l }, fallbackBoard.limitW)
	idle := celBoard(func(_, i int) int { return i }, fallbackBoard.idleW)
	noise := fmt.Sprintf("double((%s + %s / 15) %% 6)", celSeed, celAge)
	return fmt.Sprintf("(%s * (%s + (0.95 * %s - %s) * %s / 100.0 + %s))", celShare(), idle, limit, idle, celUtilization(), noise)
}

// dcgmMetric is the kwok Metric serving DCGM-exporter-named GPU series for
// simulated pods at /metrics/nodes/<node>/metrics/dcgm: one series per
// container, like dcgm-exporter with pod attribution. Prometheus adds
// Hostname and modelName from its targets (see prometheus.go).
//
// The figures follow the hardware: memory within the MIG slice or GPU,
// power within the board's limit and scaling with utilization, and
// utilization by workload kind (training busy 85-95 %, notebooks mostly
// idle with short bursts, inference following a modest wave), unless the
// pod's annotation naming.AnnotationSimGPUUtil forces it.
func dcgmMetric() *unstructured.Unstructured {
	labels := []any{
		map[string]any{"name": "gpu", "value": `"0"`},
		map[string]any{"name": "namespace", "value": "pod.metadata.namespace"},
		map[string]any{"name": "pod", "value": "pod.metadata.name"},
		map[string]any{"name": "container", "value": "container.name"},
	}
	return kwokMetric(dcgmMetricName, "/metrics/nodes/{nodeName}/metrics/dcgm",
		containerGauge("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", labels, celUtilization()),
		containerGauge("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", labels, celMemoryUsedMiB()),
		containerGauge("DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB).", labels, fmt.Sprintf("(%s - %s)", celCapacityMiB(), celMemoryUsedMiB())),
		containerGauge("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", labels, celPowerW()),
	)
}

// kwokMetric is a kwok Metric serving metrics at path ({nodeName} is the node).
func kwokMetric(name, path string, metrics ...any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kwok.x-k8s.io/v1alpha1",
		"kind":       "Metric",
		"metadata":   map[string]any{"name": name},
		"spec":       map[string]any{"path": path, "metrics": metrics},
	}}
}

// containerGauge is a gauge of a kwok Metric with one series per container.
func containerGauge(name, help string, labels []any, value string) any {
	return map[string]any{"name": name, "dimension": "container", "kind": "gauge", "help": help, "labels": labels, "value": value}
}
