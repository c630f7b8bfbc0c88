package kube

import (
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gantry-dev/gantry/internal/problem"
)

func TestMapError(t *testing.T) {
	jobs := schema.GroupResource{Group: "batch", Resource: "jobs"}
	plain := errors.New("connection refused")
	cases := map[string]struct {
		err  error
		want error
	}{
		"not found":      {err: apierrors.NewNotFound(jobs, "train"), want: ErrNotFound},
		"forbidden":      {err: apierrors.NewForbidden(jobs, "train", errors.New("no RBAC")), want: ErrForbidden},
		"conflict":       {err: apierrors.NewConflict(jobs, "train", errors.New("modified")), want: ErrConflict},
		"already exists": {err: apierrors.NewAlreadyExists(jobs, "train"), want: ErrConflict},
		"wrapped":        {err: fmt.Errorf("get job: %w", apierrors.NewNotFound(jobs, "train")), want: ErrNotFound},
	}
	kinds := []error{ErrNotFound, ErrForbidden, ErrConflict}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := MapError(tc.err)
			for _, k := range kinds {
				assert.Equal(t, k == tc.want, errors.Is(got, k), "errors.Is(%v, %v)", got, k)
			}
			// The API server's error stays reachable for callers that need its details.
			var status apierrors.APIStatus
			assert.True(t, errors.As(got, &status))
			assert.Equal(t, tc.err.Error(), got.Error())
		})
	}

	t.Run("a request the API server never answered", func(t *testing.T) {
		refused := fmt.Errorf("create job: %w", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)})
		got := MapError(refused)
		assert.ErrorIs(t, got, ErrUnreachable)
		assert.Equal(t, "cluster_unreachable", problem.Describe(got).Code)
		assert.Equal(t, problem.Unavailable, problem.Describe(got).Kind)
	})

	t.Run("other errors pass through", func(t *testing.T) {
		assert.Same(t, plain, MapError(plain))
		internal := apierrors.NewInternalError(plain)
		assert.Same(t, internal, MapError(internal))
		assert.NoError(t, MapError(nil))
	})
}
