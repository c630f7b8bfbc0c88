// Package simworkload makes the local stack's simulated training pods
// report like a real workload following Gantry's acceptance protocol
// (deploy/acceptance/README.md): for every running pod whose arguments
// carry --gantry-acceptance it writes log lines, in the container log
// format, to a file that kwok serves as the pod's log (a kwok Logs object),
// so the lines are real text read through the API server's pods/log. A pod
// that replaces one which had written a checkpoint reports "resumed".
package simworkload

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/gantry-dev/gantry/internal/naming"
)

// Flag marks a pod as an acceptance workload in its container arguments.
const Flag = "--gantry-acceptance"

// Figures are what the simulated workload reports.
type Figures struct {
	DataPullSeconds   float64
	BusBandwidthGBps  float64
	SamplesPerSecond  float64
	CheckpointSeconds float64
	// CheckpointStep is the training step the checkpoint holds.
	CheckpointStep int64
}

// Timings say how fast the simulated workload goes: Gap between its
// reports, ResumeDelay from a replacement pod's start to "resumed".
type Timings struct {
	Gap         time.Duration
	ResumeDelay time.Duration
}

// DefaultFigures are plausible figures of an H100 pool.
func DefaultFigures() Figures {
	return Figures{DataPullSeconds: 12.5, BusBandwidthGBps: 183.2, SamplesPerSecond: 2400, CheckpointSeconds: 41.2, CheckpointStep: 1200}
}

// DefaultTimings are short, so a whole acceptance run takes about a minute.
func DefaultTimings() Timings { return Timings{Gap: time.Second, ResumeDelay: 1500 * time.Millisecond} }

// Simulator writes the reports of acceptance pods.
type Simulator struct {
	Config *rest.Config
	// Dir holds the log files.
	Dir string
	// Namespace limits the simulator to one namespace; empty means every
	// team namespace.
	Namespace string
	Figures   Figures
	Timings   Timings

	mu sync.Mutex
	// handled pods by UID, with the cancel of their writer.
	handled map[string]context.CancelFunc
	// checkpoints by job UID and completion index: the step written.
	checkpoints map[string]int64
	dyn         dynamic.Interface
}

var kwokLogs = schema.GroupVersionResource{Group: "kwok.x-k8s.io", Version: "v1alpha1", Resource: "logs"}

// Run simulates until ctx ends.
func (s *Simulator) Run(ctx context.Context) error {
	kc, err := kubernetes.NewForConfig(s.Config)
	if err != nil {
		return fmt.Errorf("simworkload: client: %w", err)
	}
	if s.dyn, err = dynamic.NewForConfig(s.Config); err != nil {
		return fmt.Errorf("simworkload: dynamic client: %w", err)
	}
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return fmt.Errorf("simworkload: %w", err)
	}
	s.handled, s.checkpoints = map[string]context.CancelFunc{}, map[string]int64{}
	var opts []informers.SharedInformerOption
	if s.Namespace != "" {
		opts = append(opts, informers.WithNamespace(s.Namespace))
	}
	f := informers.NewSharedInformerFactoryWithOptions(kc, 0, opts...)
	inf := f.Core().V1().Pods().Informer()
	_, err = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { s.seen(ctx, obj) },
		UpdateFunc: func(_, obj any) { s.seen(ctx, obj) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if p, ok := obj.(*corev1.Pod); ok {
				s.gone(p)
			}
		},
	})
	if err != nil {
		return fmt.Errorf("simworkload: pod handler: %w", err)
	}
	f.Start(ctx.Done())
	<-ctx.Done()
	f.Shutdown()
	return nil
}

func isAcceptance(p *corev1.Pod) bool {
	if s := p.Namespace; s == "" {
		return false
	}
	for _, c := range p.Spec.Containers {
		if slices.Contains(c.Args, Flag) || slices.ContainsFunc(c.Args, func(a string) bool { return strings.Contains(a, " "+Flag) }) {
			return true
		}
	}
	return false
}

func (s *Simulator) seen(ctx context.Context, obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok || p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil || !isAcceptance(p) {
		return
	}
	if _, team := naming.TeamOfNamespace(p.Namespace); s.Namespace == "" && !team {
		return
	}
	key := jobKey(p)
	s.mu.Lock()
	if _, done := s.handled[string(p.UID)]; done {
		s.mu.Unlock()
		return
	}
	pctx, cancel := context.WithCancel(ctx)
	s.handled[string(p.UID)] = cancel
	step, resumed := s.checkpoints[key]
	s.mu.Unlock()
	go func() {
		if err := s.simulate(pctx, p, key, resumed, step); err != nil && pctx.Err() == nil {
			fmt.Fprintf(os.Stderr, "simworkload: pod %s/%s: %v\n", p.Namespace, p.Name, err)
		}
	}()
}

func (s *Simulator) gone(p *corev1.Pod) {
	s.mu.Lock()
	cancel, ok := s.handled[string(p.UID)]
	s.mu.Unlock()
	if ok {
		cancel()
	}
}

// jobKey names a pod's place in its job: the Job's UID and the pod's index.
func jobKey(p *corev1.Pod) string {
	owner := ""
	for _, r := range p.OwnerReferences {
		if r.Controller != nil && *r.Controller {
			owner = string(r.UID)
		}
	}
	return owner + "/" + p.Annotations["batch.kubernetes.io/job-completion-index"]
}

// simulate writes the pod's reports on schedule.
func (s *Simulator) simulate(ctx context.Context, p *corev1.Pod, key string, resumed bool, step int64) error {
	if len(p.Spec.Containers) == 0 {
		return nil
	}
	container := p.Spec.Containers[0].Name
	dir := filepath.Join(s.Dir, p.Namespace)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	file := filepath.Join(dir, p.Name+".log")
	prev := filepath.Join(dir, p.Name+".previous.log")
	for _, f := range []string{file, prev} {
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			return err
		}
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kwok.x-k8s.io/v1alpha1",
		"kind":       "Logs",
		"metadata":   map[string]any{"name": p.Name, "namespace": p.Namespace},
		"spec": map[string]any{"logs": []any{map[string]any{
			"containers": []any{container}, "logsFile": file, "previousLogsFile": prev, "follow": true,
		}}},
	}}
	if _, err := s.dyn.Resource(kwokLogs).Namespace(p.Namespace).Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create kwok Logs: %w", err)
	}
	write := func(lines ...string) error { return appendLines(file, lines...) }
	wait := func(d time.Duration) bool {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(d):
			return true
		}
	}
	f, t := s.Figures, s.Timings
	if resumed {
		if err := write(fmt.Sprintf("loading checkpoint of step %d", step)); err != nil {
			return err
		}
		if !wait(t.ResumeDelay) {
			return nil
		}
		return write(fmt.Sprintf(`{"gantry":"resumed","step":%d}`, step), fmt.Sprintf("step %d loss 1.87", step+10))
	}
	args := strings.Join(p.Spec.Containers[0].Args, " ")
	if err := write("gantry acceptance workload (simulated): " + args); err != nil {
		return err
	}
	if !wait(t.Gap) {
		return nil
	}
	if err := write(fmt.Sprintf("pulled dataset sample and base weights in %gs", f.DataPullSeconds),
		fmt.Sprintf(`{"gantry":"data-pulled","seconds":%g}`, f.DataPullSeconds)); err != nil {
		return err
	}
	if strings.Contains(args, "--all-reduce-benchmark") {
		if !wait(t.Gap) {
			return nil
		}
		if err := write(ncclOutput(f.BusBandwidthGBps)...); err != nil {
			return err
		}
	}
	if !wait(t.Gap) {
		return nil
	}
	if err := write("step 100 loss 2.31", "step 600 loss 2.02", fmt.Sprintf("step %d loss 1.91", f.CheckpointStep),
		fmt.Sprintf(`{"gantry":"throughput","samples_per_second":%g}`, f.SamplesPerSecond)); err != nil {
		return err
	}
	if !wait(t.Gap) {
		return nil
	}
	s.mu.Lock()
	s.checkpoints[key] = f.CheckpointStep
	s.mu.Unlock()
	return write(fmt.Sprintf(`{"gantry":"checkpoint-written","seconds":%g,"step":%d}`, f.CheckpointSeconds, f.CheckpointStep))
}

// ncclOutput is the tail of nccl-tests' all_reduce_perf output.
func ncclOutput(busBW float64) []string {
	return []string{
		"# nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0",
		"#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
		"#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)",
		"  4294967296    1073741824     float     sum      -1  23391.4  183.62  183.62      0  23401.2  183.54  183.54      0",
		"  8589934592    2147483648     float     sum      -1  46790.1  183.58  183.58      0  46781.9  183.61  183.61      0",
		"# Out of bounds values : 0 OK",
		fmt.Sprintf("# Avg bus bandwidth    : %g ", busBW),
		"#",
	}
}

// appendLines writes lines in the container runtime's log format, the one
// kwok (like kubelet) parses: "<RFC3339Nano> stdout F <text>".
func appendLines(path string, lines ...string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	ts := time.Now().UTC().Format(time.RFC3339Nano)
	for _, l := range lines {
		fmt.Fprintf(w, "%s stdout F %s\n", ts, l)
	}
	if err := w.Flush(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
