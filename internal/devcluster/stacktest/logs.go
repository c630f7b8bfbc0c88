package stacktest

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// kwokLogs is kwok's Logs resource: per pod, the files its kubelet-like
// server reads for pods/log.
var kwokLogs = schema.GroupVersionResource{Group: "kwok.x-k8s.io", Version: "v1alpha1", Resource: "logs"}

// PodLog is the log of one container of a simulated pod: lines appended to
// its files are what the API server's pods/log (kubectl logs) returns.
type PodLog struct {
	// Current and Previous are the files of the running container and of
	// the one before its last restart (kubectl logs --previous).
	Current, Previous string
}

// PodLog makes kwok serve a log for container of pod in namespace, from two
// files in the test's temp dir, and returns them (empty at first).
func (e *Env) PodLog(t testing.TB, namespace, pod, container string) *PodLog {
	t.Helper()
	dir := t.TempDir()
	l := &PodLog{Current: filepath.Join(dir, container+".log"), Previous: filepath.Join(dir, container+".previous.log")}
	for _, f := range []string{l.Current, l.Previous} {
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatalf("stacktest: create %s: %v", f, err)
		}
	}
	dyn, err := dynamic.NewForConfig(e.RESTConfig)
	if err != nil {
		t.Fatalf("stacktest: dynamic client: %v", err)
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kwok.x-k8s.io/v1alpha1",
		"kind":       "Logs",
		"metadata":   map[string]any{"name": pod, "namespace": namespace},
		"spec": map[string]any{"logs": []any{map[string]any{
			"containers":       []any{container},
			"logsFile":         l.Current,
			"previousLogsFile": l.Previous,
			"follow":           true,
		}}},
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := dyn.Resource(kwokLogs).Namespace(namespace).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		t.Fatalf("stacktest: create kwok Logs %s/%s: %v", namespace, pod, err)
	}
	return l
}

// Append writes lines to the running container's log.
func (l *PodLog) Append(t testing.TB, lines ...string) {
	t.Helper()
	appendCRILines(t, l.Current, len(lines), func(i int) string { return lines[i] })
}

// AppendPrevious writes lines to the previous container's log.
func (l *PodLog) AppendPrevious(t testing.TB, lines ...string) {
	t.Helper()
	appendCRILines(t, l.Previous, len(lines), func(i int) string { return lines[i] })
}

// AppendN writes n lines line(0) … line(n-1) to the running container's
// log without holding them all.
func (l *PodLog) AppendN(t testing.TB, n int, line func(i int) string) {
	t.Helper()
	appendCRILines(t, l.Current, n, line)
}

// appendCRILines writes lines in the container runtime's log format, the
// one kubelet (and kwok) parse: "<RFC3339Nano> stdout F <text>".
func appendCRILines(t testing.TB, path string, n int, line func(i int) string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatalf("stacktest: open %s: %v", path, err)
	}
	w := bufio.NewWriter(f)
	ts := time.Now().UTC().Format(time.RFC3339Nano)
	for i := range n {
		if _, err := fmt.Fprintf(w, "%s stdout F %s\n", ts, line(i)); err != nil {
			t.Fatalf("stacktest: write %s: %v", path, err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatalf("stacktest: write %s: %v", path, err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("stacktest: close %s: %v", path, err)
	}
}
