package gpu

import (
	"context"
	"fmt"
	"time"
)

// MetricContainerMemory is the kubelet's (cAdvisor's) working set of a
// container, the figure the kernel's OOM killer compares with the limit.
const MetricContainerMemory = "container_memory_working_set_bytes"

// memoryScrapeSlack is how far past the kill the peak is looked for: the
// last sample of a container is scraped up to an interval after it ends.
const memoryScrapeSlack = time.Minute

// ContainerMemoryPeak is the most memory (bytes of working set) a
// container used from start to end; ok is false when Prometheus has no
// samples of it (no cAdvisor metrics scraped, or retention passed).
func (m *Metrics) ContainerMemoryPeak(ctx context.Context, namespace, pod, container string, start, end time.Time) (bytes int64, ok bool, err error) {
	if !end.After(start) {
		return 0, false, nil
	}
	window := end.Sub(start).Truncate(time.Second) + time.Second + memoryScrapeSlack
	q := fmt.Sprintf(`max(max_over_time(%s{namespace=%q,pod=%q,container=%q}[%ds]))`,
		MetricContainerMemory, namespace, pod, container, int(window.Seconds()))
	v, ok, err := m.scalar(ctx, q, end.Add(memoryScrapeSlack))
	if err != nil || !ok {
		return 0, false, err
	}
	return int64(v), true, nil
}
