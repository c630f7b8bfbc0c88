package gpu_test

import (
	"fmt"
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

// TestIdlePeaksAndCurrentFiguresAnswerAsEachJobsQueries runs three GPU jobs on the
// stack's simulated H100 nodes, one forced to 0 %, one to 3 % and one
// busy whose name extends the second's, and reads their peaks from the
// stack's Prometheus both ways: the idle reclaim's one query for every job
// must answer for each job exactly what the job's own queries answer,
// over windows within the idle-now edge, past it, and longer than the jobs
// have run. The 3 % job is idle: the busy job's pods, named after it
// (train-b-xxxxx), are not its pods (train-xxxxx), as they were while a
// job's pods were any named <job>-<anything>. The job pages' read of every
// pod's current figures at once (CurrentFigures) must likewise answer each
// job's own figures query (JobUsage).
func TestIdlePeaksAndCurrentFiguresAnswerAsEachJobsQueries(t *testing.T) {
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
			_, ok, err := m.IdlePeak(ctx, gpu.Job{Namespace: ns, Name: job, Kind: "training"}, 20*time.Second, time.Now().Add(-5*time.Second))
			require.NoError(c, err)
			require.True(c, ok, "%s has 20 s of samples", job)
		}
	}, 2*time.Minute, time.Second)

	// A moment ago, so that no sample of it is still on its way.
	at := time.Now().Add(-5 * time.Second)
	for _, window := range []time.Duration{5 * time.Second, 20 * time.Second, time.Hour} {
		of, err := m.IdlePeaks(ctx, window, at)
		require.NoError(t, err)
		for _, name := range []string{"idle", "train", "train-b", "trai", "nosuch"} {
			for _, kind := range []string{"training", "Job", "JobSet", "notebook", "Pod"} {
				job := gpu.Job{Namespace: ns, Name: name, Kind: kind}
				want, wantOK, err := m.IdlePeak(ctx, job, window, at)
				require.NoError(t, err)
				got, ok := of(job)
				assert.Equal(t, wantOK, ok, "%s (%s) over %s: samples at both ends", job, kind, window)
				assert.Equal(t, want, got, "%s (%s) over %s: peak", job, kind, window)
			}
		}
		_, ok := of(gpu.Job{Namespace: "elsewhere", Name: "idle", Kind: "training"})
		assert.False(t, ok, "another namespace's job of the same name")
	}

	// Every pod's current figures, read at once, answer for each job what
	// the job's own figures query answers (without its series): for a run
	// long enough to have a recent peak and for one that is not.
	cur, err := m.CurrentFigures(ctx, at)
	require.NoError(t, err)
	for _, ran := range []time.Duration{time.Hour, edge / 2} {
		for _, name := range []string{"idle", "train", "train-b", "trai", "nosuch"} {
			for _, kind := range []string{"training", "Job", "JobSet", "notebook", "Pod"} {
				job := gpu.Job{Namespace: ns, Name: name, Kind: kind}
				want, err := m.JobUsage(ctx, job, at.Add(-ran), at)
				require.NoError(t, err)
				got := cur.Job(job, at.Add(-ran))
				what := fmt.Sprintf("%s (%s) run for %s", job, kind, ran)
				assert.Equal(t, want.HasData, got.HasData, "%s: has data", what)
				assert.InDelta(t, want.Utilization, got.Utilization, 1e-9, "%s: utilization", what)
				assert.InDelta(t, want.MemoryMiB, got.MemoryMiB, 1e-6, "%s: memory", what)
				assert.InDelta(t, want.PowerWatts, got.PowerWatts, 1e-6, "%s: power", what)
				assert.Equal(t, want.HasRecent, got.HasRecent, "%s: recent peak", what)
				assert.Equal(t, want.RecentPeak, got.RecentPeak, "%s: recent peak", what)
				assert.Equal(t, want.Idle, got.Idle, "%s: idle", what)
			}
		}
	}

	// And the answers are the jobs': idle at 0 %, train at its own 3 %, not
	// train-b's, nothing over an hour none of them ran; a kind whose pods
	// Gantry cannot tell apart by name (a JobSet's) takes in both.
	job := func(name, kind string) gpu.Job { return gpu.Job{Namespace: ns, Name: name, Kind: kind} }
	of, err := m.IdlePeaks(ctx, 20*time.Second, at)
	require.NoError(t, err)
	peak, ok := of(job("idle", "training"))
	assert.True(t, ok)
	assert.Equal(t, 0.0, peak)
	busy, ok := of(job("train-b", "training"))
	assert.True(t, ok)
	assert.GreaterOrEqual(t, busy, 40.0, "simulated busy GPUs are 40-95 %")
	peak, ok = of(job("train", "training"))
	assert.True(t, ok)
	assert.Equal(t, 3.0, peak, "train-b's pods are not train's")
	peak, ok = of(job("train", "JobSet"))
	assert.True(t, ok)
	assert.Equal(t, busy, peak, "train-.+ takes in train-b's pods")
	_, ok = of(job("train", "notebook"))
	assert.False(t, ok, "a Job's pods are no StatefulSet's")
	of, err = m.IdlePeaks(ctx, time.Hour, at)
	require.NoError(t, err)
	_, ok = of(job("idle", "training"))
	assert.False(t, ok, "no samples an hour ago")
}
