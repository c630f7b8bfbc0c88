package web

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/internal/kube"
	"github.com/gantry-dev/gantry/internal/queue"
)

// failureLogTail reads the last lines of a failed container as u (pods/log
// impersonated, so RBAC decides), for the cause of a non-zero exit; nil
// when the portal reads no logs.
func (h *handler) failureLogTail(u *auth.User) queue.LastLogLines {
	if h.Logs == nil || u == nil {
		return nil
	}
	return func(ctx context.Context, namespace, pod, container string, n int) ([]string, error) {
		r, err := h.Logs.Open(ctx, u.Username, u.ClusterGroups, kube.LogRequest{Namespace: namespace, Pod: pod, Container: container,
			TailLines: int64(n), LimitBytes: int64(n) * maxLogLineBytes})
		if err != nil {
			return nil, fmt.Errorf("last log lines of %s/%s %s: %w", namespace, pod, container, err)
		}
		defer func() { _ = r.Close() }()
		lines := newLogLines(r, maxLogLineBytes)
		var out []string
		for {
			l, _, err := lines.next()
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			if err != nil {
				return out, fmt.Errorf("last log lines of %s/%s %s: %w", namespace, pod, container, err)
			}
			out = append(out, l)
		}
	}
}
