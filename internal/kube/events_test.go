package kube

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestEventCacheKeepsTeamEventsAboutJobsAndIndexesThemByObject(t *testing.T) {
	ev := func(ns, kind, name string) *corev1.Event {
		return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + ".1"},
			InvolvedObject: corev1.ObjectReference{Kind: kind, Name: name, Namespace: ns}}
	}
	cases := map[string]struct {
		event     *corev1.Event
		keep      bool
		wantIndex []string
	}{
		"pod of a team":            {event: ev("team-vision", "Pod", "train-0"), keep: true, wantIndex: []string{"team-vision/Pod/train-0"}},
		"kueue workload of a team": {event: ev("team-nlp", "Workload", "job-a"), keep: true, wantIndex: []string{"team-nlp/Workload/job-a"}},
		"job of a team":            {event: ev("team-nlp", "Job", "a"), keep: true, wantIndex: []string{"team-nlp/Job/a"}},
		"other namespace":          {event: ev("kube-system", "Pod", "etcd"), wantIndex: []string{"kube-system/Pod/etcd"}},
		"kind no job page shows":   {event: ev("team-vision", "ConfigMap", "c"), wantIndex: []string{"team-vision/ConfigMap/c"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.keep, keepEvent(tc.event))
			got, err := involvedIndex(tc.event)
			assert.NoError(t, err)
			assert.Equal(t, tc.wantIndex, got)
		})
	}
}
