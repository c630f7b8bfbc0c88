package kube

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"
	kueuefake "sigs.k8s.io/kueue/client-go/clientset/versioned/fake"

	"github.com/gantry-dev/gantry/internal/naming"
)

// setEveryPointer points every nil pointer field of the struct v points
// to at a new zero value, so that a field left out of a copy shows.
func setEveryPointer(v reflect.Value) {
	for i := range v.NumField() {
		if f := v.Field(i); f.Kind() == reflect.Pointer && f.IsNil() && f.CanSet() {
			f.Set(reflect.New(f.Type().Elem()))
		}
	}
}

// A Job read from the cache has every field of its spec and status that
// the API server sent, but its pod template and selector; when a new
// Kubernetes adds a field to JobSpec, this fails until the cache keeps it.
func TestCachedJobKeepsEveryFieldButTheTemplate(t *testing.T) {
	specType, kept := reflect.TypeFor[batchv1.JobSpec](), reflect.TypeFor[jobSpec]()
	for i := range specType.NumField() {
		f := specType.Field(i)
		if f.Name == "Template" || f.Name == "Selector" {
			continue
		}
		k, ok := kept.FieldByName(f.Name)
		if assert.True(t, ok, "the cache keeps JobSpec.%s", f.Name) {
			assert.Equal(t, f.Type, k.Type, "JobSpec.%s", f.Name)
		}
	}

	at := metav1.NewTime(time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC))
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "team-vision", Name: "train-a", UID: "u-1", ResourceVersion: "7",
		CreationTimestamp: at, Labels: map[string]string{naming.LabelOwner: "alice", naming.LabelInstance: "train-a"}},
		Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue,
			Reason: "DeadlineExceeded", LastTransitionTime: at}}, CompletedIndexes: "0-2", Active: 1, Succeeded: 3, Failed: 2}}
	setEveryPointer(reflect.ValueOf(&job.Spec).Elem())
	setEveryPointer(reflect.ValueOf(&job.Status).Elem())
	want := job.DeepCopy()
	want.Spec.Template, want.Spec.Selector = corev1.PodTemplateSpec{}, nil
	job.Spec.Template.Spec.Containers = []corev1.Container{{Name: "main", Image: "nvcr.io/nvidia/pytorch:24.01"}}

	shared := newSharedMaps()
	cached := cacheJob(job, shared)
	assert.Equal(t, want, cached.job())

	// Another launch of the same owner shares the first one's labels, and
	// each reads back its own instance.
	other := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "team-vision", Name: "train-b",
		Labels: map[string]string{naming.LabelOwner: "alice", naming.LabelInstance: "train-b"}}}
	second := cacheJob(other, shared)
	assert.Equal(t, reflect.ValueOf(cached.Labels).Pointer(), reflect.ValueOf(second.Labels).Pointer(), "one copy of the labels")
	assert.Equal(t, map[string]string{naming.LabelOwner: "alice", naming.LabelInstance: "train-b"}, second.job().Labels)
	assert.Equal(t, "train-a", cached.job().Labels[naming.LabelInstance])

	// A streamed list passes what the transform made through it again.
	again, err := shared.trimJobCacheObject(second)
	require.NoError(t, err)
	assert.Same(t, second, again)
	assert.Equal(t, reflect.ValueOf(cached.Labels).Pointer(), reflect.ValueOf(second.Labels).Pointer(), "still one copy")
}

// The job cache keeps a Job without its pod template's struct; pages read
// it back as a batchv1.Job, and the job list and outside-workload index
// still see it come and go.
func TestJobCacheReturnsTheJobItKeptCompact(t *testing.T) {
	meta := gantryMeta("team-vision", "train-a", "vision")
	meta.Labels[naming.LabelOwner] = "alice"
	created := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	meta.CreationTimestamp = metav1.NewTime(created)
	job := &batchv1.Job{ObjectMeta: meta, Spec: batchv1.JobSpec{ActiveDeadlineSeconds: new(int64(3600)), Completions: new(int32(4)),
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main"}}}}},
		Status: batchv1.JobStatus{Failed: 1, Conditions: []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "DeadlineExceeded"}}}}
	kube := kubefake.NewClientset(job)
	c, err := NewJobCache(kube, kueuefake.NewSimpleClientset(), 0)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c.Start(ctx)
	require.NoError(t, c.WaitForSync(ctx))

	obj, ok, err := c.jobs.GetIndexer().GetByKey("team-vision/train-a")
	require.NoError(t, err)
	require.True(t, ok)
	assert.IsType(t, &cachedJob{}, obj, "the cache holds the compact form")

	got, err := c.Job("team-vision", "train-a")
	require.NoError(t, err)
	assert.Equal(t, int64(3600), *got.Spec.ActiveDeadlineSeconds, "the deadline a failure is explained by")
	assert.Equal(t, int32(4), *got.Spec.Completions)
	assert.Equal(t, "DeadlineExceeded", got.Status.Conditions[0].Reason)
	assert.Equal(t, "alice", got.Labels[naming.LabelOwner])
	assert.Empty(t, got.Spec.Template.Spec.Containers)

	// What a job list row reads, without building the Job.
	state, err := c.JobState("team-vision", "train-a")
	require.NoError(t, err)
	assert.Equal(t, "alice", state.Labels[naming.LabelOwner])
	assert.Equal(t, "vision", state.Labels[naming.LabelTeam])
	assert.Equal(t, got.Status.Conditions, state.Conditions)
	assert.Equal(t, got.Spec.Parallelism, state.Parallelism)
	assert.LessOrEqual(t, testing.AllocsPerRun(100, func() { _, _ = c.JobState("team-vision", "train-a") }), 1.0, "a row's state allocates its key only")

	refs, total, err := c.JobRefs(JobQuery{Namespaces: []string{"team-vision"}, Limit: 10})
	require.NoError(t, err)
	assert.Equal(t, 1, total)
	assert.Equal(t, []JobRef{{Namespace: "team-vision", Name: "train-a", Kind: KindJob, Owner: "alice", Created: created.UnixNano()}}, refs)

	require.NoError(t, kube.BatchV1().Jobs("team-vision").Delete(ctx, "train-a", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool {
		_, total, _ := c.JobRefs(JobQuery{Namespaces: []string{"team-vision"}, Limit: 10})
		return total == 0
	}, 10*time.Second, 10*time.Millisecond, "a deleted job leaves the list")
	_, err = c.Job("team-vision", "train-a")
	assert.ErrorIs(t, err, ErrNotFound)
	_, err = c.JobState("team-vision", "train-a")
	assert.ErrorIs(t, err, ErrNotFound)
}
