package devcluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// kwok (v0.8.0) builds the routes of its Metric objects each time its
// informer of them reports a change, from a list it keeps under the
// informer's last synced resource version. At its start that version is
// still empty when the informer delivers the listed objects, if the
// informer's reflector has not set it yet (a busy machine lets that
// happen): kwok then reads the empty list it keeps under the unchanged
// version, builds no route, and answers 404 on every Metric path until a
// Metric changes. Prometheus then has no GPU and no container memory
// series at all: a 10,000-workload load run stopped on "DCGM series of the
// 1000 running pods in Prometheus (last count 0)" that way. Touching a
// Metric (an annotation) makes kwok read them again.

// The kwok Metric objects of the local stack.
const (
	dcgmMetricName            = "gantry-dcgm"
	kubeletResourceMetricName = "gantry-kubelet-resource"
)

// kwokRereadAnnotation is set on a Metric, to the time, to make kwok read
// its Metric objects again.
const kwokRereadAnnotation = "gantry.dev/kwok-reread"

// kwokRereadEvery is how long kwok gets to serve its Metric paths, after
// its start or a touch, before they are touched (again).
const kwokRereadEvery = 3 * time.Second

var kwokMetricResource = schema.GroupVersionResource{Group: "kwok.x-k8s.io", Version: "v1alpha1", Resource: "metrics"}

// kwokMetricPaths is each kwok Metric's path for the node.
func kwokMetricPaths(node string) map[string]string {
	return map[string]string{
		dcgmMetricName:            dcgmMetricsPath(node),
		kubeletResourceMetricName: resourceMetricsPath(node),
	}
}

// errMetricNotServed is a kwok Metric whose path answers 404.
var errMetricNotServed = errors.New("kwok does not serve it (404)")

// kwokMetricsServed checks that kwok at base serves each of its Metric
// objects' paths for the node, and returns the names of those it does not
// serve.
func kwokMetricsServed(ctx context.Context, base, node string) ([]string, error) {
	var missing []string
	for name, path := range kwokMetricPaths(node) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
		if err != nil {
			return nil, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, fmt.Errorf("kwok metric %s: %w", name, err)
		}
		_ = resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusNotFound:
			missing = append(missing, name)
		case resp.StatusCode != http.StatusOK:
			return nil, fmt.Errorf("kwok metric %s: GET %s: %s", name, path, resp.Status)
		}
	}
	return missing, nil
}

// kwokMetricsCheck is a check that kwok serves its Metric paths for the
// node; while it does not, it touches the Metric objects it does not serve
// every so often (every, counted from the check's making: a kwok just
// started gets that long to read them), so that kwok reads them again.
// touch nil only checks.
func kwokMetricsCheck(base, node string, touch func(ctx context.Context, name string) error, every time.Duration) func(context.Context) error {
	touched := time.Now()
	return func(ctx context.Context) error {
		missing, err := kwokMetricsServed(ctx, base, node)
		if err != nil || len(missing) == 0 {
			return err
		}
		if touch != nil && time.Since(touched) >= every {
			touched = time.Now()
			for _, name := range missing {
				if err := touch(ctx, name); err != nil {
					return err
				}
			}
		}
		return fmt.Errorf("metric %s at %s: %w", missing[0], base, errMetricNotServed)
	}
}

// touchKwokMetric sets the Metric's kwokRereadAnnotation to now: kwok sees
// a change and reads its Metric objects again.
func touchKwokMetric(dyn dynamic.Interface) func(ctx context.Context, name string) error {
	return func(ctx context.Context, name string) error {
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, kwokRereadAnnotation, strconv.FormatInt(time.Now().UnixNano(), 10))
		_, err := dyn.Resource(kwokMetricResource).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		if err != nil {
			return fmt.Errorf("touch kwok metric %s: %w", name, err)
		}
		return nil
	}
}
