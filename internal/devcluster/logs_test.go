package devcluster_test

import (
	"bufio"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/gantry-dev/gantry/internal/devcluster/stacktest"
)

// The API server proxies pods/log to kwok's kubelet-like server at the
// simulated node's address: what kubectl logs shows is the Logs file.
func TestAPIServerServesSimulatedPodLogs(t *testing.T) {
	env := stacktest.Stack(t)
	team := env.Team(t, stacktest.TeamSpec{Quotas: map[string]corev1.ResourceList{
		cpuPool: quota("cpu", "4", "memory", "8Gi"),
	}})
	ns := team.Namespace()
	ctx := context.Background()
	job := createJob(t, env, jobBuilder{name: "talker", namespace: ns, requests: quota("cpu", "1", "memory", "1Gi"),
		annotations: map[string]string{"gantry.dev/simulate-duration": "10m"}})
	pod := requireRunningOnPool(t, env, ns, "batch.kubernetes.io/job-name="+job.Name, cpuPool, 1)[0]

	log := env.PodLog(t, ns, pod.Name, "main")
	log.Append(t, "epoch 1 loss 0.91", "epoch 2 loss 0.57")
	log.AppendPrevious(t, "CUDA error: out of memory")

	read := func(opts corev1.PodLogOptions) (string, error) {
		b, err := env.Kube.CoreV1().Pods(ns).GetLogs(pod.Name, &opts).DoRaw(ctx)
		return string(b), err
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		got, err := read(corev1.PodLogOptions{Container: "main"})
		require.NoError(c, err)
		assert.Equal(c, "epoch 1 loss 0.91\nepoch 2 loss 0.57\n", got)
	}, 20*time.Second, 250*time.Millisecond, "kwok picks up the Logs object")

	got, err := read(corev1.PodLogOptions{Container: "main", TailLines: ptr.To[int64](1)})
	require.NoError(t, err)
	assert.Equal(t, "epoch 2 loss 0.57\n", got, "tail of one line")
	got, err = read(corev1.PodLogOptions{Container: "main", Previous: true})
	require.NoError(t, err)
	assert.Equal(t, "CUDA error: out of memory\n", got, "previous container")

	// Follow: a line appended after the stream opened arrives on it.
	fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	stream, err := env.Kube.CoreV1().Pods(ns).GetLogs(pod.Name, &corev1.PodLogOptions{Container: "main", Follow: true}).Stream(fctx)
	require.NoError(t, err)
	defer stream.Close()
	lines := bufio.NewScanner(stream)
	var seen []string
	for len(seen) < 2 && lines.Scan() {
		seen = append(seen, lines.Text())
	}
	require.Equal(t, []string{"epoch 1 loss 0.91", "epoch 2 loss 0.57"}, seen)
	log.Append(t, "epoch 3 loss 0.33")
	require.True(t, lines.Scan(), "followed stream ends early: %v", lines.Err())
	assert.Equal(t, "epoch 3 loss 0.33", strings.TrimSpace(lines.Text()))
	cancel()
	_, _ = io.Copy(io.Discard, stream)
}
