package kube

import (
	"unique"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/gantry-dev/gantry/internal/naming"
)

// trimSpec drops the parts of a cached object that no page reads. Pods keep
// node name and selector, scheduling gates and each container's name, image
// and resources (status, causes and logs read them); Workloads keep their
// pod sets' pool selector and requests (the queue explains them); Jobs,
// StatefulSets and Deployments keep no pod template at all (their status
// is read from their own fields, their Workloads and their Pods). At 10,000
// jobs the pod templates were most of the caches' memory.
func trimSpec(obj any) {
	switch o := obj.(type) {
	case *corev1.Pod:
		trimPodSpec(&o.Spec)
	case *batchv1.Job:
		o.Spec.Template = corev1.PodTemplateSpec{}
	case *appsv1.StatefulSet:
		o.Spec.Template = corev1.PodTemplateSpec{}
		o.Spec.VolumeClaimTemplates = nil
	case *appsv1.Deployment:
		o.Spec.Template = corev1.PodTemplateSpec{}
	case *kueue.Workload:
		for i := range o.Spec.PodSets {
			t := &o.Spec.PodSets[i].Template
			t.ObjectMeta = metav1.ObjectMeta{}
			cs := make([]corev1.Container, len(t.Spec.Containers))
			for j, c := range t.Spec.Containers {
				cs[j] = corev1.Container{Name: c.Name, Resources: corev1.ResourceRequirements{Requests: c.Resources.Requests}}
			}
			t.Spec = corev1.PodSpec{NodeSelector: t.Spec.NodeSelector, Containers: cs}
		}
	}
}

// trimNode keeps what the node cache reads of a Node: its name, its labels
// (which pool it is in) and its allocatable resources, one map of each
// shared by the nodes of a pool. Each of a thousand simulated nodes
// otherwise carried its conditions, a dozen strings of node info,
// addresses, capacity and image list (5 MiB at 1,000 nodes in the
// 10,000-workload run), and labels of its own: they differ only in the
// hostname label, which is the node's name and so is kept as a mark that
// says so (nodeLabels puts it back), leaving the labels of a pool's nodes
// equal (2.5 MiB of maps at 1,000 nodes).
func (s *sharedMaps) trimNode(obj any) (any, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	trimMeta(n, nil)
	if host, ok := n.Labels[corev1.LabelHostname]; ok && host == n.Name {
		delete(n.Labels, corev1.LabelHostname)
		n.Labels[hostnameIsName] = ""
	}
	n.Labels = s.stringMap(n.Labels)
	n.Annotations, n.OwnerReferences, n.Finalizers = nil, nil, nil
	n.Spec = corev1.NodeSpec{}
	n.Status = corev1.NodeStatus{Allocatable: s.resourceList(n.Status.Allocatable)}
	return n, nil
}

// cachedLabel tells the labels of the job cache's objects that the portal
// reads from the cache: whose team, user, template and pool a job is, the
// instance that ties a launch's objects together, and a pod's completion
// index (its attempt). A launched object carries a dozen more (the shared
// labels every policy asks for); the acceptance run reads those live, so
// the caches keep a third of each object's labels.
func cachedLabel(key string) bool {
	switch key {
	case naming.LabelTeam, naming.LabelOwner, naming.LabelTemplate, naming.LabelTemplateVersion,
		naming.LabelPool, naming.LabelInstance, batchv1.JobCompletionIndexAnnotation:
		return true
	}
	return false
}

// cachedAnnotation tells the annotations read from the job cache: the
// idle episode a notebook or endpoint was last scaled for, and a pod's
// completion index (older Jobs set only the annotation).
func cachedAnnotation(key string) bool {
	return key == naming.AnnotationIdleEpisode || key == batchv1.JobCompletionIndexAnnotation
}

// trimJobCacheObject is trimObject for the job cache's objects (Jobs,
// StatefulSets, Deployments, Pods, Workloads): it also keeps only the
// labels and annotations the portal reads, drops the selectors of Jobs,
// StatefulSets and Deployments (their pods are found by the instance
// label), shares the maps and pod sets equal across objects, and keeps a
// Job as a cachedJob. A cachedJob is kept as it is: a streamed list
// (watch-list) passes each object through the transform twice, once into
// the reflector's temporary store and once into the informer's, and
// trimming a cachedJob's labels again gave each Job a copy of its own.
func (s *sharedMaps) trimJobCacheObject(obj any) (any, error) {
	if _, ok := obj.(*cachedJob); ok {
		return obj, nil
	}
	if o, ok := obj.(metav1.Object); ok {
		trimMeta(o, cachedLabel)
		o.SetAnnotations(keepKeys(o.GetAnnotations(), cachedAnnotation))
		o.SetFinalizers(nil)
		internNames(o)
	}
	switch o := obj.(type) {
	case *kueue.Workload:
		trimWorkloadStatus(o)
	case *batchv1.Job:
		o.Spec.Selector = nil
	case *appsv1.StatefulSet:
		o.Spec.Selector = nil
	case *appsv1.Deployment:
		o.Spec.Selector = nil
	}
	trimSpec(obj)
	s.object(obj)
	if j, ok := obj.(*batchv1.Job); ok {
		return cacheJob(j, s), nil
	}
	return obj, nil
}

// internNames shares the namespace and the owners' API versions and kinds
// that every object of a team repeats: each decoded object carried its own
// copies (tens of thousands of small strings at 10,000 workloads).
func internNames(o metav1.Object) {
	o.SetNamespace(intern(o.GetNamespace()))
	refs := o.GetOwnerReferences()
	for i := range refs {
		refs[i].APIVersion, refs[i].Kind = intern(refs[i].APIVersion), intern(refs[i].Kind)
	}
}

// keepKeys is m with only the keys keep tells (every key when keep is
// nil), each key and value interned: Gantry's labels repeat on every
// object, and at 10,000 objects per kind their copies were most of what
// metadata cost. nil when none is left.
func keepKeys(m map[string]string, keep func(string) bool) map[string]string {
	var out map[string]string
	for k, v := range m {
		if keep == nil || keep(k) {
			if out == nil {
				out = make(map[string]string, min(len(m), 8))
			}
			out[intern(k)] = intern(v)
		}
	}
	return out
}

// intern is the one copy of s that equal strings across the caches share.
func intern(s string) string { return unique.Make(s).Value() }

// trimWorkloadStatus keeps what the queue explains a wait or an end from:
// the conditions and the admission. Requeue state, admission checks,
// resource requests and scheduling statistics are not read. A condition's
// strings are interned: thousands of waiting Workloads carry the same
// "couldn't assign flavors … 8 more needed", and admitted ones the same
// "Quota reserved in ClusterQueue team-…".
func trimWorkloadStatus(wl *kueue.Workload) {
	wl.Status = kueue.WorkloadStatus{Conditions: wl.Status.Conditions, Admission: wl.Status.Admission}
	for i := range wl.Status.Conditions {
		c := &wl.Status.Conditions[i]
		c.Type, c.Reason, c.Message = intern(c.Type), intern(c.Reason), intern(c.Message)
	}
}

func trimPodSpec(s *corev1.PodSpec) {
	*s = corev1.PodSpec{
		NodeName:          s.NodeName,
		NodeSelector:      s.NodeSelector,
		SchedulingGates:   s.SchedulingGates,
		PriorityClassName: s.PriorityClassName,
		Containers:        trimContainers(s.Containers),
		InitContainers:    trimContainers(s.InitContainers),
	}
}

func trimContainers(cs []corev1.Container) []corev1.Container {
	if len(cs) == 0 {
		return nil
	}
	out := make([]corev1.Container, len(cs))
	for i, c := range cs {
		out[i] = corev1.Container{Name: c.Name, Image: c.Image, Resources: c.Resources}
	}
	return out
}
