package queue

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
)

func TestPendingSentence(t *testing.T) {
	cases := map[string]struct {
		p    PendingReason
		want string
	}{
		"the issue's example": {
			p:    PendingReason{Flavor: "h100-sxm-ib-training", Resource: "nvidia.com/gpu", Needed: 4, TeamReserved: 12, TeamNominal: 16, PositionCluster: 3},
			want: "waiting for 4 H100 GPUs: your team uses 12 of 16, the cohort has none to lend; 3 jobs ahead",
		},
		"cohort can lend, Kueue said the shortfall": {
			p:    PendingReason{Flavor: "l40s-pcie-inference", Resource: "nvidia.com/gpu", Needed: 1, TeamReserved: 4, TeamNominal: 4, CohortLendable: 2, Shortfall: 1, PositionCluster: 0},
			want: "waiting for 1 L40S GPU: your team uses 4 of 4, the cohort can lend 2 (1 more needed); next in line",
		},
		"MIG slices, position unknown": {
			p:    PendingReason{Flavor: "a100-mig-shared", Resource: "nvidia.com/mig-1g.10gb", Needed: 2, TeamReserved: 2, TeamNominal: 2, PositionCluster: -1},
			want: "waiting for 2 MIG 1g.10gb slices: your team uses 2 of 2, the cohort has none to lend",
		},
		"nothing known": {
			p:    PendingReason{PositionCluster: 1},
			want: "waiting for Kueue to admit it; 1 job ahead",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.p.sentence())
		})
	}
}

func TestFailureOfPods(t *testing.T) {
	oom := &corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "main",
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}}}}}}
	ok := &corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "main",
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}}}}}
	oom.Name, ok.Name = "a", "b"
	assert.Nil(t, failureOf([]*corev1.Pod{ok}))
	assert.Equal(t, &Failure{Pod: "a", Container: "main", ExitCode: 137, Reason: "OOMKilled", OOMKilled: true}, failureOf([]*corev1.Pod{ok, oom}))
}
