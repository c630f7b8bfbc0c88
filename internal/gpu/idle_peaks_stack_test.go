package gpu_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/gantry/internal/devcluster/stacktest"
	"github.com/gantry-dev/gantry/internal/gpu"
	"github.com/gantry-dev/gantry/internal/naming"
)

const h100 = "h100-sxm-ib-training"

// TestIdlePeaksAnswersAsIdlePeakForEveryJob runs three GPU jobs on the
// stack's simulated H100 nodes, one forced to 0 %, one to 3 % and one
// busy whose name extends the second's, and reads their peaks from the
// stack's Prometheus both ways: the idle reclaim's one query for every job
// must answer for each job exactly what the job's own queries answer,
// over windows within the idle-now edge, past it, and longer than the jobs
// have run.
func TestIdlePeaksAnswersAsIdlePeakForEveryJob(t *testing.T) {
	env := stacktest.Stack(t)
	ctx := t.Context()
	team := env.Team(t, stacktest.TeamSpec{Quotas: map[string]corev1.ResourceList{
		h100: {"nvidia.com/gpu": resource.MustParse("3"), "cpu": resource.MustParse("6"), "memory": resource.MustParse("24Gi")},
	}})
	ns := team.Namespace()
	for name, util := range map[string]string{"idle": "0", "train": "3", "train-b": ""} {
		job := stacktest.CompliantJob(team.Name, name, corev1.ResourceList{
			"nvidia.com/gpu": resource.MustParse("1"), "cpu": resource.MustParse("1"), "memory": resource.MustParse("4Gi"),
		})
		stacktest.OnPool(job, h100)
		job.Spec.Template.Annotations = map[string]string{"gantry.dev/simulate-duration": "10m"}
		if util != "" {
			job.Spec.Template.Annotations[naming.AnnotationSimGPUUtil] = util
		}
		_, err := env.Kube.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{})
		require.NoError(t, err)
	}

	const edge = 10 * time.Second
	m, err := gpu.New(env.PrometheusURL, gpu.WithIdleNowWindow(edge))
	require.NoError(t, err)
	// Until every job has samples over a 20-second window.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		for _, job := range []string{"idle", "train", "train-b"} {
			_, ok, err := m.IdlePeak(ctx, ns, job, 20*time.Second, time.Now().Add(-5*time.Second))
			require.NoError(c, err)
			require.True(c, ok, "%s has 20 s of samples", job)
		}
	}, 2*time.Minute, time.Second)

	// A moment ago, so that no sample of it is still on its way.
	at := time.Now().Add(-5 * time.Second)
	for _, window := range []time.Duration{5 * time.Second, 20 * time.Second, time.Hour} {
		of, err := m.IdlePeaks(ctx, window, at)
		require.NoError(t, err)
		for _, job := range []string{"idle", "train", "train-b", "trai", "nosuch"} {
			want, wantOK, err := m.IdlePeak(ctx, ns, job, window, at)
			require.NoError(t, err)
			got, ok := of(ns, job)
			assert.Equal(t, wantOK, ok, "%s over %s: samples at both ends", job, window)
			assert.Equal(t, want, got, "%s over %s: peak", job, window)
		}
		_, ok := of("elsewhere", "idle")
		assert.False(t, ok, "another namespace's job of the same name")
	}

	// And the answers are the jobs': idle at 0 %, train's pattern taking in
	// train-b's busy pod, nothing over an hour none of them ran.
	of, err := m.IdlePeaks(ctx, 20*time.Second, at)
	require.NoError(t, err)
	peak, ok := of(ns, "idle")
	assert.True(t, ok)
	assert.Equal(t, 0.0, peak)
	busy, ok := of(ns, "train-b")
	assert.True(t, ok)
	assert.GreaterOrEqual(t, busy, 40.0, "simulated busy GPUs are 40-95 %")
	peak, ok = of(ns, "train")
	assert.True(t, ok)
	assert.Equal(t, busy, peak, "train-b's pods match train-.+")
	of, err = m.IdlePeaks(ctx, time.Hour, at)
	require.NoError(t, err)
	_, ok = of(ns, "idle")
	assert.False(t, ok, "no samples an hour ago")
}
