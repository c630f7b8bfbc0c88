package kube

import (
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
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
			compact, err := compactEvent(tc.event)
			assert.NoError(t, err)
			assert.Equal(t, tc.wantIndex, involvedObject(compact))
		})
	}
}

func TestEventCacheKeepsACompactEventWithWhatJobPagesRead(t *testing.T) {
	at := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	full := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-nlp", Name: "job-train.18a7f", ResourceVersion: "4711", UID: "u-1",
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kueue"}}, Annotations: map[string]string{"a": "b"}},
		InvolvedObject: corev1.ObjectReference{Kind: "Workload", Name: "job-train", UID: "u-2", APIVersion: "kueue.x-k8s.io/v1beta2"},
		Type:           corev1.EventTypeWarning, Reason: "Pending", Count: 3,
		Message:        "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor h100, 8 more needed",
		Source:         corev1.EventSource{Component: "kueue-admission", Host: "node-1"},
		FirstTimestamp: metav1.NewTime(at.Add(-time.Hour)), LastTimestamp: metav1.NewTime(at.Add(-time.Minute)),
		Series: &corev1.EventSeries{Count: 3, LastObservedTime: metav1.NewMicroTime(at)},
	}
	obj, err := compactEvent(full)
	require.NoError(t, err)
	e, ok := obj.(*Event)
	require.True(t, ok, "the cache keeps the compact form, got %T", obj)
	assert.Equal(t, &Event{Namespace: "team-nlp", Name: "job-train.18a7f", ResourceVersion: "4711",
		Kind: "Workload", Object: "job-train", ObjectNamespace: "team-nlp",
		Type: corev1.EventTypeWarning, Reason: "Pending", Message: full.Message, Count: 3, LastSeen: at}, e,
		"the series' last time is when it last happened; an involved object without a namespace is in the event's")

	// The informer keys and versions it as it does the API object.
	key, err := cache.MetaNamespaceKeyFunc(e)
	require.NoError(t, err)
	assert.Equal(t, "team-nlp/job-train.18a7f", key)
	m, err := apimeta.Accessor(e)
	require.NoError(t, err)
	assert.Equal(t, "4711", m.GetResourceVersion())

	// A relist passes what the cache holds through the transform again.
	again, err := compactEvent(e)
	require.NoError(t, err)
	assert.Same(t, e, again)

	// Thousands of waiting Workloads say the same sentence: one copy of it.
	// A message that names its object is its own.
	other := full.DeepCopy()
	other.Name, other.InvolvedObject.Name = "job-eval.18a80", "job-eval"
	obj, err = compactEvent(other)
	require.NoError(t, err)
	assert.Equal(t, unsafe.StringData(e.Message), unsafe.StringData(obj.(*Event).Message), "the same sentence is shared")
	named := full.DeepCopy()
	named.Message = "Created pod: job-train-0-abcde"
	obj, err = compactEvent(named)
	require.NoError(t, err)
	assert.Equal(t, named.Message, obj.(*Event).Message)
	assert.Equal(t, unsafe.StringData(named.Message), unsafe.StringData(obj.(*Event).Message), "kept as it came")
}
