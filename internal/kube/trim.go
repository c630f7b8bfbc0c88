package kube

import (
	"unique"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// trimSpec drops the parts of a cached object that no page reads. Pods keep
// node name and selector, scheduling gates and each container's name, image
// and resources (status, causes and logs read them); Workloads keep their
// pod sets' pool selector and requests (the queue explains them); Jobs,
// StatefulSets and Deployments keep no pod template at all (their status
// is read from their own fields, their Workloads and their Pods). At 10,000
// jobs the pod templates were most of the caches' memory.
func trimSpec(obj any) {
	if o, ok := obj.(metav1.Object); ok {
		internLabels(o)
	}
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
	case *corev1.Node:
		o.Status.Images = nil
		o.Status.VolumesAttached, o.Status.VolumesInUse = nil, nil
	}
}

// internLabels makes every cached object share one copy of each label key
// and value: Gantry's dozen labels repeat on every object, and at 10,000
// objects per kind their copies are most of what metadata costs.
func internLabels(o metav1.Object) {
	l := o.GetLabels()
	if len(l) == 0 {
		return
	}
	out := make(map[string]string, len(l))
	for k, v := range l {
		out[unique.Make(k).Value()] = unique.Make(v).Value()
	}
	o.SetLabels(out)
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
