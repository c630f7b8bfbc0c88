package gpu

import (
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
)

// currentSample is one tagged sample of CurrentFigures' query.
func currentSample(ns, pod, fig string, v float64) *model.Sample {
	return &model.Sample{Metric: model.Metric{"namespace": model.LabelValue(ns), "pod": model.LabelValue(pod),
		figureLabel: model.LabelValue(fig)}, Value: model.SampleValue(v)}
}

// podSamples are a pod's samples: its GPUs' utilization, memory and power
// summed, how many GPUs, and its peak.
func podSamples(ns, pod string, util, mem, power float64, gpus int, peak float64) model.Vector {
	return model.Vector{
		currentSample(ns, pod, "util", util), currentSample(ns, pod, "util_n", float64(gpus)),
		currentSample(ns, pod, "mem", mem), currentSample(ns, pod, "mem_n", float64(gpus)),
		currentSample(ns, pod, "power", power), currentSample(ns, pod, "power_n", float64(gpus)),
		currentSample(ns, pod, "peak", peak),
	}
}

// A job's figures from every pod's are the mean over the GPUs of the pods
// its kind names after it, and their highest peak; a pod of another job
// whose name extends the job's, a pod of the same name elsewhere and a job
// that has not run for the idle-now window are told apart.
func TestCurrentFoldsEachJobsPods(t *testing.T) {
	at := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	var vec model.Vector
	// train: an indexed Job with a 2-GPU pod and a 1-GPU pod.
	vec = append(vec, podSamples("team-a", "train-0-x7k2p", 150, 2000, 600, 2, 90)...)
	vec = append(vec, podSamples("team-a", "train-1-b9zq4", 30, 1000, 100, 1, 35)...)
	// train-b: its pods are not train's.
	vec = append(vec, podSamples("team-a", "train-b-mm4tq", 95, 500, 400, 1, 99)...)
	// The same name in another namespace.
	vec = append(vec, podSamples("team-b", "train-0-qqqqq", 1, 1, 1, 1, 1)...)
	// A notebook, idle.
	vec = append(vec, podSamples("team-a", "nb-0", 2, 800, 60, 1, 3)...)
	c := NewCurrent(vec, at, 2*time.Minute)

	u := c.Job(Job{Namespace: "team-a", Name: "train", Kind: "training"}, at.Add(-time.Hour))
	assert.True(t, u.HasData)
	assert.InDelta(t, 60, u.Utilization, 1e-9, "(150+30)/3 GPUs")
	assert.InDelta(t, 1000, u.MemoryMiB, 1e-9)
	assert.InDelta(t, 233.333, u.PowerWatts, 1e-3)
	assert.True(t, u.HasRecent)
	assert.Equal(t, 90.0, u.RecentPeak, "train-b's 99 is not train's")
	assert.False(t, u.Idle)
	assert.Equal(t, at, u.At)

	u = c.Job(Job{Namespace: "team-a", Name: "train", Kind: "JobSet"}, at.Add(-time.Hour))
	assert.InDelta(t, (150+30+95)/4.0, u.Utilization, 1e-9, "a kind whose pods Gantry cannot tell apart takes in train-b's")

	u = c.Job(Job{Namespace: "team-a", Name: "nb", Kind: "notebook"}, at.Add(-time.Hour))
	assert.True(t, u.Idle, "every sample of the last 2 minutes under 5%")

	u = c.Job(Job{Namespace: "team-a", Name: "nb", Kind: "notebook"}, at.Add(-time.Minute))
	assert.True(t, u.HasData)
	assert.False(t, u.HasRecent, "not run for the idle-now window yet")
	assert.False(t, u.Idle)

	u = c.Job(Job{Namespace: "team-c", Name: "train", Kind: "training"}, at.Add(-time.Hour))
	assert.False(t, u.HasData, "no pods in that namespace")
	u = c.Job(Job{Namespace: "team-a", Name: "trai", Kind: "training"}, at.Add(-time.Hour))
	assert.False(t, u.HasData, "train's pods are not trai's")
	u = c.Job(Job{Namespace: "team-a", Name: "train", Kind: "training"}, at)
	assert.False(t, u.HasData, "admitted at the instant asked: no range")
}
