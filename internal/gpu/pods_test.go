package gpu

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A job's GPU figures are its own pods' series: the pattern its queries
// ask for (PromQL anchors it) takes in the pods its controller names after
// it and none of a neighbour's whose name begins with the job's.
func TestJobPodPatternsTakeInTheJobsOwnPodsOnly(t *testing.T) {
	long := strings.Repeat("l", 60)
	for _, c := range []struct {
		job         Job
		own, others []string
	}{
		{Job{"ns", "train", "training"}, []string{"train-x7bk9", "train-0-x7bk9", "train-12-h5vcz"},
			[]string{"train-b-q2zr4", "train-v2-q2zr4", "train-x7bk", "train-x7bk9z", "train-0", "trainx-x7bk9", "train-abcde"}},
		{Job{"ns", "train", "Job"}, []string{"train-x7bk9"}, []string{"train-b-q2zr4"}},
		{Job{"ns", "nb", "notebook"}, []string{"nb-0", "nb-12"}, []string{"nb-1-0", "nb-x7bk9", "nb-v2-6d4cf56db6-wq8xn"}},
		{Job{"ns", "nb", "StatefulSet"}, []string{"nb-0"}, []string{"nb-x-0"}},
		{Job{"ns", "serve", "inference"}, []string{"serve-6d4cf56db6-wq8xn", "serve-7b9-wq8xn"},
			[]string{"serve-v2-6d4cf56db6-wq8xn", "serve-0", "serve-wq8xn", "serve-a1-wq8xn"}},
		{Job{"ns", "serve", "Deployment"}, []string{"serve-6d4cf56db6-wq8xn"}, []string{"serve-v2-0"}},
		{Job{"ns", "by-hand", "Pod"}, []string{"by-hand"}, []string{"by-hand-0", "by-han"}},
		// Kinds whose pod names Gantry does not know: anything after the name.
		{Job{"ns", "sweep", "JobSet"}, []string{"sweep-workers-0-0-x7bk9", "sweep-x"}, []string{"sweep", "sweepx-0"}},
		// A name too long for the whole suffix: what the API server keeps of it.
		{Job{"ns", long, "training"}, []string{long[:58] + "x7bk9"}, []string{long[:57] + "-x7bk9"}},
		{Job{"ns", long[:50], "training"}, []string{long[:50] + "-1234567-x7bk"}, []string{long[:50] + "x"}},
	} {
		re := regexp.MustCompile(`^(?:` + c.job.podPattern() + `)$`)
		for _, pod := range c.own {
			assert.True(t, re.MatchString(pod), "%s (%s) takes in its pod %s", c.job.Name, c.job.Kind, pod)
		}
		for _, pod := range c.others {
			assert.False(t, re.MatchString(pod), "%s (%s) leaves out pod %s", c.job.Name, c.job.Kind, pod)
		}
	}
	assert.Equal(t, `DCGM_FI_DEV_GPU_UTIL{namespace="team-a",pod=~"a\\.b-[0-9]+"}`,
		selector(MetricUtil, Job{"team-a", "a.b", "notebook"}), "the name is quoted as a pattern")
}
