package kube

import (
	"context"
	"fmt"
	"hash/crc32"
	"runtime"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	kueuefake "sigs.k8s.io/kueue/client-go/clientset/versioned/fake"

	"github.com/gantry-dev/gantry/internal/naming"
)

// The production-like cache of issue 17: 10,000 launched training jobs
// across three teams with their Workloads, 1,000 of them admitted and
// running one pod each, on 1,000 nodes.
const (
	benchJobs    = 10_000
	benchRunning = 1_000
	benchNodes   = 1_000
)

var benchTeams = []string{"vision", "nlp", "speech"}

// renderedMeta is a launched object's metadata as the API server returns
// it: Gantry's labels, the launch's parameters, and the managed fields.
func renderedMeta(team, name string, i int, created time.Time) metav1.ObjectMeta {
	labels := map[string]string{naming.LabelManagedBy: naming.ManagedBy, naming.LabelInstance: name}
	for _, k := range naming.SharedLabels() {
		if _, ok := labels[k]; !ok {
			labels[k] = "value-" + team
		}
	}
	labels[naming.LabelTeam], labels[naming.LabelOwner] = team, fmt.Sprintf("user-%02d", i%50)
	return metav1.ObjectMeta{Namespace: naming.Namespace(team), Name: name, UID: types.UID(fmt.Sprintf("uid-%d", i)),
		CreationTimestamp: metav1.NewTime(created), Labels: labels,
		Annotations: map[string]string{naming.AnnotationParameters: `{"image":"nvcr.io/nvidia/pytorch:24.01-py3","gpus":8,"memory":"64Gi","cpu":"16","command":"torchrun --nproc-per-node 8 train.py --config configs/large.yaml"}`},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "gantry", Operation: metav1.ManagedFieldsOperationUpdate,
			FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:labels":{` + strings.Repeat(`"f:gantry.dev/x":{},`, 40) + `"f:y":{}}},"f:spec":{"f:template":{"f:spec":{"f:containers":{}}}}}`)}}}
}

// renderedPodSpec is a training pod's spec as a template renders it.
func renderedPodSpec(pool string) corev1.PodSpec {
	var env []corev1.EnvVar
	for i := range 12 {
		env = append(env, corev1.EnvVar{Name: fmt.Sprintf("NCCL_SETTING_%d", i), Value: "some-value-of-a-setting"})
	}
	return corev1.PodSpec{NodeSelector: map[string]string{naming.LabelPool: pool}, RestartPolicy: corev1.RestartPolicyNever,
		Tolerations: []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
		Volumes:     []corev1.Volume{{Name: "dshm", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}}, {Name: "data"}},
		Containers: []corev1.Container{{Name: "main", Image: "nvcr.io/nvidia/pytorch:24.01-py3",
			Command: []string{"torchrun", "--nproc-per-node", "8", "train.py", "--config", "configs/large.yaml"}, Env: env,
			VolumeMounts: []corev1.VolumeMount{{Name: "dshm", MountPath: "/dev/shm"}, {Name: "data", MountPath: "/data"}},
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{"cpu": resource.MustParse("16"), "memory": resource.MustParse("64Gi"), "nvidia.com/gpu": resource.MustParse("8")},
				Limits:   corev1.ResourceList{"cpu": resource.MustParse("16"), "memory": resource.MustParse("64Gi"), "nvidia.com/gpu": resource.MustParse("8")}},
			SecurityContext: &corev1.SecurityContext{RunAsNonRoot: new(true), AllowPrivilegeEscalation: new(false),
				Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}}}}
}

// recordedEvent is an Event as a controller's recorder writes it about an
// object of a team.
func recordedEvent(involved metav1.ObjectMeta, kind, component, typ, reason, message string, i int, at time.Time) *corev1.Event {
	return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: involved.Namespace, Name: fmt.Sprintf("%s.%08x%08x", involved.Name, i, crc32.ChecksumIEEE([]byte(reason))),
		UID: types.UID(fmt.Sprintf("event-uid-%s-%d", reason, i)), ResourceVersion: fmt.Sprint(100000 + i), CreationTimestamp: metav1.NewTime(at),
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: component, Operation: metav1.ManagedFieldsOperationUpdate,
			FieldsV1: metav1.NewFieldsV1(`{"f:count":{},"f:firstTimestamp":{},"f:involvedObject":{},"f:lastTimestamp":{},"f:message":{},"f:reason":{},"f:source":{"f:component":{}},"f:type":{}}`)}}},
		InvolvedObject: corev1.ObjectReference{Kind: kind, Namespace: involved.Namespace, Name: involved.Name, UID: involved.UID,
			APIVersion: "v1", ResourceVersion: fmt.Sprint(90000 + i)},
		Reason: reason, Message: message, Type: typ, Count: 1, Source: corev1.EventSource{Component: component},
		FirstTimestamp: metav1.NewTime(at), LastTimestamp: metav1.NewTime(at)}
}

// jobEvents are the events Kueue, the Job controller and the kubelet record
// about a launched job: a pending job's two, a running one's seven.
func jobEvents(job *batchv1.Job, wl *kueue.Workload, pod *corev1.Pod, i int, at time.Time) []kruntime.Object {
	evs := []kruntime.Object{recordedEvent(job.ObjectMeta, "Job", "kueue-job-controller", corev1.EventTypeNormal, "CreatedWorkload",
		"Created Workload: "+wl.Namespace+"/"+wl.Name, i, at)}
	if pod == nil {
		return append(evs, recordedEvent(wl.ObjectMeta, "Workload", "kueue-admission", corev1.EventTypeWarning, "Pending",
			"couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor h100, 8 more needed", i, at))
	}
	return append(evs,
		recordedEvent(wl.ObjectMeta, "Workload", "kueue-admission", corev1.EventTypeNormal, "QuotaReserved",
			"Quota reserved in ClusterQueue "+wl.Namespace+", wait time since queued was 61s", i, at),
		recordedEvent(wl.ObjectMeta, "Workload", "kueue-admission", corev1.EventTypeNormal, "Admitted",
			"Admitted by ClusterQueue "+wl.Namespace+", wait time since reservation was 0s", i, at),
		recordedEvent(job.ObjectMeta, "Job", "kueue-job-controller", corev1.EventTypeNormal, "Started",
			"Admitted by clusterQueue "+wl.Namespace, i, at),
		recordedEvent(job.ObjectMeta, "Job", "job-controller", corev1.EventTypeNormal, "SuccessfulCreate",
			"Created pod: "+pod.Name, i, at),
		recordedEvent(pod.ObjectMeta, "Pod", "default-scheduler", corev1.EventTypeNormal, "Scheduled",
			"Successfully assigned "+pod.Namespace+"/"+pod.Name+" to "+pod.Spec.NodeName, i, at),
		recordedEvent(pod.ObjectMeta, "Pod", "kubelet", corev1.EventTypeNormal, "Started", "Started container main", i, at))
}

// seededClients are fake clientsets holding the production-like cluster.
func seededClients() (*kubefake.Clientset, *kueuefake.Clientset) {
	now := time.Now()
	var kobjs, qobjs []kruntime.Object
	for i := range benchJobs {
		team := benchTeams[i%len(benchTeams)]
		name := fmt.Sprintf("train-%05d", i)
		created := now.Add(-time.Duration(benchJobs-i) * time.Minute)
		job := &batchv1.Job{ObjectMeta: renderedMeta(team, name, i, created),
			Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{ObjectMeta: renderedMeta(team, name, i, created), Spec: renderedPodSpec("h100")}}}
		kobjs = append(kobjs, job)
		wl := &kueue.Workload{ObjectMeta: renderedMeta(team, "job-"+name, i, created),
			Spec: kueue.WorkloadSpec{QueueName: naming.LocalQueue, PodSets: []kueue.PodSet{{Name: "main", Count: 1, Template: job.Spec.Template}}}}
		wl.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: name, UID: job.UID, Controller: new(true)}}
		var pod *corev1.Pod
		wl.Status.Conditions = []metav1.Condition{{Type: kueue.WorkloadQuotaReserved, Status: metav1.ConditionFalse, LastTransitionTime: metav1.NewTime(created),
			Reason: "Pending", Message: "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor h100, 8 more needed"}}
		if i >= benchJobs-benchRunning {
			at := metav1.NewTime(created.Add(time.Minute))
			wl.Status.Conditions = []metav1.Condition{{Type: kueue.WorkloadQuotaReserved, Status: metav1.ConditionTrue, LastTransitionTime: at,
				Reason: "QuotaReserved", Message: "Quota reserved in ClusterQueue " + naming.Namespace(team)},
				{Type: kueue.WorkloadAdmitted, Status: metav1.ConditionTrue, LastTransitionTime: at,
					Reason: "Admitted", Message: "The workload is admitted"}}
			wl.Status.Admission = &kueue.Admission{ClusterQueue: kueue.ClusterQueueReference(naming.Namespace(team)), PodSetAssignments: []kueue.PodSetAssignment{{Name: "main",
				Flavors: map[corev1.ResourceName]kueue.ResourceFlavorReference{"nvidia.com/gpu": "h100"}, ResourceUsage: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}}}}
			pod = &corev1.Pod{ObjectMeta: renderedMeta(team, name+"-abcde", i, created), Spec: renderedPodSpec("h100"),
				Status: corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &at}}
			pod.Labels[naming.LabelInstance] = name
			pod.Spec.NodeName = fmt.Sprintf("gpu-%04d", i%benchNodes)
			kobjs = append(kobjs, pod)
		}
		kobjs = append(kobjs, jobEvents(job, wl, pod, i, created)...)
		qobjs = append(qobjs, wl)
	}
	for i := range benchNodes {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("gpu-%04d", i), Labels: map[string]string{naming.LabelPool: "h100"}},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}}}
		for j := range 20 {
			n.Status.Images = append(n.Status.Images, corev1.ContainerImage{Names: []string{fmt.Sprintf("registry.example/image-%d@sha256:%064d", j, j)}, SizeBytes: 1 << 30})
		}
		kobjs = append(kobjs, n)
	}
	return kubefake.NewClientset(kobjs...), kueuefake.NewSimpleClientset(qobjs...)
}

func heapInUse() float64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapInuse)
}

// BenchmarkSeededCaches fills the portal's informers from a fake API server
// holding the production-like cluster and reports the memory the caches
// hold (after the transforms) and one page of the job list from the index.
func BenchmarkSeededCaches(b *testing.B) {
	kc, qc := seededClients()
	before := heapInUse()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	jobs, err := NewJobCache(kc, qc, 0)
	if err != nil {
		b.Fatal(err)
	}
	nodes := NewNodeCache(kc, 0)
	events, err := NewEventCache(kc, 0)
	if err != nil {
		b.Fatal(err)
	}
	queues, err := NewCache(qc, 0)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	jobs.Start(ctx)
	nodes.Start(ctx)
	events.Start(ctx)
	queues.Start(ctx)
	if err := jobs.WaitForSync(ctx); err != nil {
		b.Fatal(err)
	}
	if err := nodes.WaitForSync(ctx); err != nil {
		b.Fatal(err)
	}
	if err := events.WaitForSync(ctx); err != nil {
		b.Fatal(err)
	}
	synced := time.Since(start)
	cacheMiB := (heapInUse() - before) / (1 << 20)
	q := JobQuery{Namespaces: []string{"team-vision", "team-nlp", "team-speech"}, Offset: 100, Limit: 50}
	b.ResetTimer()
	for b.Loop() {
		if refs, total, err := jobs.JobRefs(q); err != nil || len(refs) != 50 || total != benchJobs {
			b.Fatalf("page: %d refs of %d, %v", len(refs), total, err)
		}
	}
	b.StopTimer()
	b.ReportMetric(cacheMiB, "cache-MiB")
	b.ReportMetric(synced.Seconds(), "sync-s")
}
