package devcluster

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gantry-dev/gantry/internal/gpu"
	"github.com/gantry-dev/gantry/internal/naming"
)

// resourceMetricsPath is where kwok serves a node's kubelet resource
// metrics (the kubelet's /metrics/resource), scraped by Prometheus as job
// "kubelet".
func resourceMetricsPath(node string) string { return "/metrics/nodes/" + node + "/metrics/resource" }

// KwokResourceMetricsURL is where kwok serves a node's simulated container
// memory (container_memory_working_set_bytes).
func KwokResourceMetricsURL(node string) string {
	return fmt.Sprintf("http://127.0.0.1:%d%s", kwokServerPort, resourceMetricsPath(node))
}

// celMemoryLimit is the container's memory limit, else its request, else
// 512Mi (a kwok Quantity).
func celMemoryLimit() string {
	return fmt.Sprintf(`(%s ? container.resources.limits["memory"] : (%s ? container.resources.requests["memory"] : Quantity("512Mi")))`,
		celHas("container.resources.limits", "memory"), celHas("container.resources.requests", "memory"))
}

// celSimulatedSeconds is the pod's simulate-duration annotation in seconds
// (the kwok stages' 5 s when absent), as a double.
func celSimulatedSeconds() string {
	return fmt.Sprintf(`(%s ? double(duration(pod.metadata.annotations[%q]).getMilliseconds()) / 1000.0 : 5.0)`,
		celHas("pod.metadata.annotations", naming.AnnotationSimulateDuration), naming.AnnotationSimulateDuration)
}

// celWorkingSetShare is the part of its memory limit a container's working
// set fills. A pod kwok is going to kill out of memory (annotation
// naming.AnnotationSimulateReason OOMKilled, killed simulate-duration
// after it runs) climbs from half its limit to all of it over the first
// two thirds of that time and stays there until the kill, as a process
// does whose allocations the kernel keeps reclaiming until it gives up.
// Any other container settles at 45-54 % of it within its first 30 s.
func celWorkingSetShare() string {
	age := "pod.SinceSecond()"
	oom := fmt.Sprintf(`(%s && pod.metadata.annotations[%q] == "OOMKilled")`,
		celHas("pod.metadata.annotations", naming.AnnotationSimulateReason), naming.AnnotationSimulateReason)
	climb := fmt.Sprintf("(%[1]s >= %[2]s * 2.0 / 3.0 ? 1.0 : 0.5 + 0.75 * %[1]s / %[2]s)", age, celSimulatedSeconds())
	settled := fmt.Sprintf("(0.45 + double(%s %% 10) / 100.0)", celSeed)
	steady := fmt.Sprintf("(%[1]s < 30.0 ? 0.2 + (%[2]s - 0.2) * %[1]s / 30.0 : %[2]s)", age, settled)
	return fmt.Sprintf("(%s ? %s : %s)", oom, climb, steady)
}

// containerMemoryMetric is the kwok Metric serving the kubelet's resource
// metric container_memory_working_set_bytes for simulated pods at
// /metrics/nodes/<node>/metrics/resource, the figure the OOM killer
// compares with the limit and the portal reads for an out-of-memory
// cause's peak. A container that no longer runs uses none.
func containerMemoryMetric() *unstructured.Unstructured {
	labels := []any{
		map[string]any{"name": "container", "value": "container.name"},
		map[string]any{"name": "namespace", "value": "pod.metadata.namespace"},
		map[string]any{"name": "pod", "value": "pod.metadata.name"},
	}
	return kwokMetric(kubeletResourceMetricName, "/metrics/nodes/{nodeName}/metrics/resource",
		containerGauge(gpu.MetricContainerMemory, "[ALPHA] Current working set of the container in bytes", labels,
			fmt.Sprintf(`(pod.status.phase == "Running" ? %s * %s : Quantity("0"))`, celMemoryLimit(), celWorkingSetShare())))
}
