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
// counts towards every job its name could belong to, as IdlePeak's
// pattern <job>-.+ matches it, and a job needs samples at both ends of the
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
		{"team-a", "train-x1", 3, true, true},
		{"team-a", "train-b-y2", 60, true, true}, // train-b's pod: train's pattern matches it too
		{"team-a", "quiet-0", 1, true, true},
		{"team-a", "young-0", 2, true, false}, // no samples at the window's start
		{"team-a", "gone-0", 0, false, true},  // none at its end
		{"team-b", "train-x1", 0, true, true}, // another team's job of the same name
		{"team-a", "odd-", 0, true, true},     // matches no <job>-.+
		{"team-a", "", 0, true, true},         // a GPU no pod holds
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
		ns, job string
		peak    float64
		ok      bool
	}{
		{"team-a", "train", 60, true},
		{"team-a", "train-b", 60, true},
		{"team-a", "quiet", 1, true},
		{"team-a", "young", 0, false},
		{"team-a", "gone", 0, false},
		{"team-b", "train", 0, true},
		{"team-a", "odd", 0, false},
		{"team-a", "nosuch", 0, false},
		{"team-a", "trai", 0, false},
	} {
		peak, ok := of(c.ns, c.job)
		assert.Equal(t, c.ok, ok, "%s/%s has samples at both ends", c.ns, c.job)
		if c.ok {
			assert.Equal(t, c.peak, peak, "%s/%s peak", c.ns, c.job)
		}
	}

	// A window within the idle-now edge has no start to check.
	short, asked := prometheusAnswering(t, sample("peak", "team-a", "young-0", 2)+","+sample("now", "team-a", "young-0", 2))
	short.idleNow = 2 * time.Minute
	of, err = short.IdlePeaks(context.Background(), time.Minute, at)
	require.NoError(t, err)
	assert.NotContains(t, (*asked)[0], "offset")
	peak, ok := of("team-a", "young")
	assert.True(t, ok)
	assert.Equal(t, 2.0, peak)
}
