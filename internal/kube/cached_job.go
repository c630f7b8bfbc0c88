package kube

import (
	"maps"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/gantry/internal/naming"
)

// cachedJob is what the job cache keeps of a batch Job: its trimmed
// metadata, its spec's own fields and its status. A batchv1.Job is 1,320
// bytes however little of it is set, 800 of them the struct of a pod
// template the cache never reads (the job's pods and Workload say what it
// asked for); ten thousand Jobs kept 10 MiB of empty templates
// (BenchmarkSeededCaches). JobCache.Job builds the batchv1.Job back from it.
type cachedJob struct {
	// ObjectMeta's labels are shared with the Jobs that have the same
	// (sharedMaps), without the instance label when it is the Job's name,
	// as it is for every Job Gantry launches: the instance made each Job's
	// labels a map of its own, 3 MiB at 10,000 Jobs.
	metav1.ObjectMeta
	instanceIsName bool
	spec           jobSpec
	status         batchv1.JobStatus
}

// jobSpec is a JobSpec without its pod template and selector (a launch's
// pods are found by its instance label). TestCachedJobKeepsEveryFieldButTheTemplate
// fails when a new Kubernetes adds a field this does not carry.
type jobSpec struct {
	Parallelism, Completions, BackoffLimit, BackoffLimitPerIndex *int32
	MaxFailedIndexes, TTLSecondsAfterFinished                    *int32
	ActiveDeadlineSeconds                                        *int64
	PodFailurePolicy                                             *batchv1.PodFailurePolicy
	SuccessPolicy                                                *batchv1.SuccessPolicy
	ManualSelector, Suspend                                      *bool
	CompletionMode                                               *batchv1.CompletionMode
	PodReplacementPolicy                                         *batchv1.PodReplacementPolicy
	ManagedBy                                                    *string
	Scheduling                                                   *batchv1.JobSchedulingConfiguration
}

// cacheJob is the cache's copy of a trimmed Job, whose labels are its own
// (the transform's copy: cacheJob may change them).
func cacheJob(j *batchv1.Job, shared *sharedMaps) *cachedJob {
	instanceIsName := j.Name != "" && j.Labels[naming.LabelInstance] == j.Name
	if instanceIsName {
		delete(j.Labels, naming.LabelInstance)
	}
	j.Labels = shared.stringMap(j.Labels)
	s := &j.Spec
	return &cachedJob{ObjectMeta: j.ObjectMeta, instanceIsName: instanceIsName, status: j.Status, spec: jobSpec{
		Parallelism: s.Parallelism, Completions: s.Completions, BackoffLimit: s.BackoffLimit,
		BackoffLimitPerIndex: s.BackoffLimitPerIndex, MaxFailedIndexes: s.MaxFailedIndexes,
		TTLSecondsAfterFinished: s.TTLSecondsAfterFinished, ActiveDeadlineSeconds: s.ActiveDeadlineSeconds,
		PodFailurePolicy: s.PodFailurePolicy, SuccessPolicy: s.SuccessPolicy, ManualSelector: s.ManualSelector,
		Suspend: s.Suspend, CompletionMode: s.CompletionMode, PodReplacementPolicy: s.PodReplacementPolicy,
		ManagedBy: s.ManagedBy, Scheduling: s.Scheduling}}
}

// job is the cached Job as a batchv1.Job, without its pod template and
// selector. It shares its maps, slices and pointers with the cache: like
// every object the cache returns, it must not be modified.
func (c *cachedJob) job() *batchv1.Job {
	meta := c.ObjectMeta
	if c.instanceIsName {
		meta.Labels = maps.Clone(meta.Labels)
		if meta.Labels == nil {
			meta.Labels = make(map[string]string, 1)
		}
		meta.Labels[naming.LabelInstance] = c.Name
	}
	s := &c.spec
	return &batchv1.Job{ObjectMeta: meta, Status: c.status, Spec: batchv1.JobSpec{
		Parallelism: s.Parallelism, Completions: s.Completions, BackoffLimit: s.BackoffLimit,
		BackoffLimitPerIndex: s.BackoffLimitPerIndex, MaxFailedIndexes: s.MaxFailedIndexes,
		TTLSecondsAfterFinished: s.TTLSecondsAfterFinished, ActiveDeadlineSeconds: s.ActiveDeadlineSeconds,
		PodFailurePolicy: s.PodFailurePolicy, SuccessPolicy: s.SuccessPolicy, ManualSelector: s.ManualSelector,
		Suspend: s.Suspend, CompletionMode: s.CompletionMode, PodReplacementPolicy: s.PodReplacementPolicy,
		ManagedBy: s.ManagedBy, Scheduling: s.Scheduling}}
}

// JobState is what a job's status reads of its batch Job: its labels,
// parallelism, active pods and conditions. The job cache answers it
// without building a batchv1.Job, 1,320 bytes for each row of a job list
// (half of what the job list allocated per view at 10,000 workloads).
type JobState struct {
	// Labels are shared with the cache: they must not be modified. From
	// the cache they lack the instance label when it is the Job's name.
	Labels      map[string]string
	Parallelism *int32
	Active      int32
	Conditions  []batchv1.JobCondition
}

// StateOf is the state of a whole Job.
func StateOf(j *batchv1.Job) JobState {
	return JobState{Labels: j.Labels, Parallelism: j.Spec.Parallelism, Active: j.Status.Active, Conditions: j.Status.Conditions}
}

func (c *cachedJob) state() JobState {
	return JobState{Labels: c.Labels, Parallelism: c.spec.Parallelism, Active: c.status.Active, Conditions: c.status.Conditions}
}
