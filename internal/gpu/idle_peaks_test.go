package gpu

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A pass of the idle reclaim asks Prometheus once for every job; each pod
// counts towards the jobs whose pattern its name fits, as IdlePeak's
// selector matches it (a Job's pods are <job>-<5 random>, a StatefulSet's
// <name>-<ordinal>, ...), and a job needs samples at both ends of the
// window.
func TestIdlePeaksFoldPodsIntoTheirJobs(t *testing.T) {
	at := time.Date(2026, 12, 5, 6, 0, 0, 0, time.UTC)
	sample := func(fig, ns, pod string, v float64) string {
		return fmt.Sprintf(`{"metric":{%q:%q,"namespace":%q,"pod":%q},"value":[%d,"%g"]}`, figureLabel, fig, ns, pod, at.Unix(), v)
	}
	var result []string
	for _, s := range []struct {
		ns, pod  string
		peak     float64
		now, old bool
	}{
		{"team-a", "train-x7bk9", 3, true, true},
		{"team-a", "train-b-q2zr4", 60, true, true}, // train-b's pod: only a pattern of any suffix takes it into train
		{"team-a", "multi-1-h5vcz", 20, true, true}, // an Indexed Job's
		{"team-a", "serve-6d4cf56db6-wq8xn", 70, true, true},
		{"team-a", "quiet-0", 1, true, true},
		{"team-a", "young-0", 2, true, false},    // no samples at the window's start
		{"team-a", "gone-0", 0, false, true},     // none at its end
		{"team-b", "train-x7bk9", 0, true, true}, // another team's job of the same name
		{"team-a", "odd-", 0, true, true},        // fits no pattern but its own name's
		{"team-a", "", 0, true, true},            // a GPU no pod holds
	} {
		result = append(result, sample("peak", s.ns, s.pod, s.peak))
		if s.now {
			result = append(result, sample("now", s.ns, s.pod, s.peak))
		}
		if s.old {
			result = append(result, sample("then", s.ns, s.pod, s.peak))
		}
	}
	m, asked := prometheusAnswering(t, strings.Join(result, ","))
	m.idleNow = 2 * time.Minute
	of, err := m.IdlePeaks(context.Background(), time.Hour, at)
	require.NoError(t, err)
	require.Len(t, *asked, 1, "one query for every job")
	q := (*asked)[0]
	assert.Contains(t, q, `max by (namespace, pod) (last_over_time(DCGM_FI_DEV_GPU_UTIL[120000ms]))`)
	assert.Contains(t, q, `max by (namespace, pod) (max_over_time(DCGM_FI_DEV_GPU_UTIL[3600000ms]))`)
	assert.Contains(t, q, `max by (namespace, pod) (last_over_time(DCGM_FI_DEV_GPU_UTIL[120000ms] offset 3480000ms))`)
	assert.True(t, strings.HasSuffix(q, fmt.Sprintf("@%d", at.Unix())), q)

	for _, c := range []struct {
		job  Job
		peak float64
		ok   bool
	}{
		{Job{"team-a", "train", "training"}, 3, true},
		{Job{"team-a", "train", "Job"}, 3, true},
		{Job{"team-a", "train", "JobSet"}, 60, true}, // pods of any suffix: train-b's too
		{Job{"team-a", "train-b", "training"}, 60, true},
		{Job{"team-a", "multi", "training"}, 20, true},
		{Job{"team-a", "multi", "notebook"}, 0, false}, // multi-1-h5vcz is no StatefulSet's
		{Job{"team-a", "serve", "inference"}, 70, true},
		{Job{"team-a", "serve", "Deployment"}, 70, true},
		{Job{"team-a", "serve", "training"}, 0, false},
		{Job{"team-a", "quiet", "notebook"}, 1, true},
		{Job{"team-a", "quiet", "StatefulSet"}, 1, true},
		{Job{"team-a", "quiet-0", "Pod"}, 1, true},
		{Job{"team-a", "quiet", "training"}, 0, false},
		{Job{"team-a", "young", "notebook"}, 0, false},
		{Job{"team-a", "gone", "notebook"}, 0, false},
		{Job{"team-b", "train", "training"}, 0, true},
		{Job{"team-a", "odd", "notebook"}, 0, false},
		{Job{"team-a", "odd-", "Pod"}, 0, true},
		{Job{"team-a", "nosuch", "training"}, 0, false},
		{Job{"team-a", "trai", "training"}, 0, false},
	} {
		peak, ok := of(c.job)
		assert.Equal(t, c.ok, ok, "%s (%s) has samples at both ends", c.job, c.job.Kind)
		if c.ok {
			assert.Equal(t, c.peak, peak, "%s (%s) peak", c.job, c.job.Kind)
		}
	}

	// A window within the idle-now edge has no start to check.
	short, asked := prometheusAnswering(t, sample("peak", "team-a", "young-0", 2)+","+sample("now", "team-a", "young-0", 2))
	short.idleNow = 2 * time.Minute
	of, err = short.IdlePeaks(context.Background(), time.Minute, at)
	require.NoError(t, err)
	assert.NotContains(t, (*asked)[0], "offset")
	peak, ok := of(Job{"team-a", "young", "notebook"})
	assert.True(t, ok)
	assert.Equal(t, 2.0, peak)
}
