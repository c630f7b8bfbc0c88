package kube

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/gantry-dev/gantry/internal/naming"
)

// InstanceOf is the name of the launch a Gantry object belongs to (its
// app.kubernetes.io/instance label); empty for other objects.
func InstanceOf(o metav1.Object) string { return o.GetLabels()[naming.LabelInstance] }

// PodByName returns the named pod from the cache, or an error matching ErrNotFound.
func (c *JobCache) PodByName(namespace, name string) (*corev1.Pod, error) {
	obj, ok, err := c.pods.GetIndexer().GetByKey(namespace + "/" + name)
	if err != nil {
		return nil, fmt.Errorf("get pod %s/%s from cache: %w", namespace, name, err)
	}
	if !ok {
		return nil, &APIError{Kind: ErrNotFound, Err: fmt.Errorf("pod %s/%s not found", namespace, name)}
	}
	return obj.(*corev1.Pod), nil
}

// WatchJobObjects calls onPod with every pod and onWorkload with every
// Workload the cache holds now and with each new state of one (added,
// updated, or its last state when deleted), until the returned stop is
// called. The callbacks run on the informers' goroutines: they must be quick.
func (c *JobCache) WatchJobObjects(onPod func(*corev1.Pod), onWorkload func(*kueue.Workload)) (stop func(), err error) {
	podReg, err := c.pods.AddEventHandler(handlerOf(onPod))
	if err != nil {
		return nil, fmt.Errorf("watch pods: %w", err)
	}
	wlReg, err := c.workloads.AddEventHandler(handlerOf(onWorkload))
	if err != nil {
		_ = c.pods.RemoveEventHandler(podReg)
		return nil, fmt.Errorf("watch workloads: %w", err)
	}
	return func() {
		_ = c.pods.RemoveEventHandler(podReg)
		_ = c.workloads.RemoveEventHandler(wlReg)
	}, nil
}

func handlerOf[T any](fn func(T)) cache.ResourceEventHandler {
	call := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if t, ok := obj.(T); ok {
			fn(t)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { call(obj) },
		UpdateFunc: func(_, obj any) { call(obj) },
		DeleteFunc: call,
	}
}
