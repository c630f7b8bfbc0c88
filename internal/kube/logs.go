package kube

import (
	"context"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"

	"github.com/gantry-dev/gantry/internal/identity"
)

// LogRequest selects a container's log and how much of it to read.
type LogRequest struct {
	Namespace, Pod, Container string
	// Previous reads the container instance before its last restart.
	Previous bool
	// Follow keeps the stream open and sends lines as they are written.
	Follow bool
	// Timestamps starts each line with the time it was written (RFC 3339).
	Timestamps bool
	// TailLines, when positive, starts that many lines before the end;
	// LimitBytes, when positive, ends the stream after that many bytes.
	TailLines, LimitBytes int64
}

// PodLogs reads container logs as the signed-in person: pods/log goes to
// the API server impersonating them, so RBAC decides who reads what.
type PodLogs struct {
	Base       *rest.Config
	Identities identity.Prefixes
	// Pods lists a job's pods from the informer cache (a *JobCache).
	Pods interface {
		Pods(namespace, instance string) ([]*corev1.Pod, error)
	}
}

// LogTarget is a pod whose container logs can be read.
type LogTarget struct {
	Pod        string
	Phase      corev1.PodPhase
	Containers []LogContainer
}

// LogContainer is a container of a pod; Restarts > 0 means a previous
// instance's log may be read.
type LogContainer struct {
	Name     string
	Restarts int32
}

// Targets lists the pods of the job whose objects are named instance, with
// their containers (init containers first, as they run), from the cache.
func (l *PodLogs) Targets(namespace, instance string) ([]LogTarget, error) {
	pods, err := l.Pods.Pods(namespace, instance)
	if err != nil {
		return nil, err
	}
	out := make([]LogTarget, 0, len(pods))
	for _, p := range pods {
		restarts := map[string]int32{}
		for _, cs := range append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
			restarts[cs.Name] = cs.RestartCount
		}
		t := LogTarget{Pod: p.Name, Phase: p.Status.Phase}
		for _, c := range append(append([]corev1.Container(nil), p.Spec.InitContainers...), p.Spec.Containers...) {
			t.Containers = append(t.Containers, LogContainer{Name: c.Name, Restarts: restarts[c.Name]})
		}
		out = append(out, t)
	}
	return out, nil
}

// Open streams a container's log as username with groups (IdP values,
// prefixed here). The caller reads and closes it; nothing is buffered
// beyond the transport's own reads.
func (l *PodLogs) Open(ctx context.Context, username string, groups []string, req LogRequest) (io.ReadCloser, error) {
	cfg := ForUser(l.Base, l.Identities, username, groups)
	// A followed log streams for as long as the reader wants; ctx ends it.
	cfg.Timeout = 0
	c, err := corev1client.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("logs client: %w", err)
	}
	opts := &corev1.PodLogOptions{Container: req.Container, Previous: req.Previous, Follow: req.Follow, Timestamps: req.Timestamps}
	if req.TailLines > 0 {
		opts.TailLines = &req.TailLines
	}
	if req.LimitBytes > 0 {
		opts.LimitBytes = &req.LimitBytes
	}
	rc, err := c.Pods(req.Namespace).GetLogs(req.Pod, opts).Stream(ctx)
	if err != nil {
		return nil, fmt.Errorf("log of %s/%s container %s: %w", req.Namespace, req.Pod, req.Container, mapLogError(err))
	}
	return rc, nil
}

// mapLogError classifies a pods/log error. The kubelet answers 400 for a
// log that does not exist (no previous instance, a container not started
// yet): to the reader that is "not found".
func mapLogError(err error) error {
	if apierrors.IsBadRequest(err) {
		return &APIError{Kind: ErrNotFound, Err: err}
	}
	return MapError(err)
}
