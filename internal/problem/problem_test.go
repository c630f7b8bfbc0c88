package problem

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

type denied struct{ reason string }

func (e *denied) Error() string { return e.reason }
func (e *denied) Problem() Problem {
	return Problem{Kind: Forbidden, Title: "Not allowed", Detail: e.reason}
}

func TestDescribe(t *testing.T) {
	gone := New("not found", Problem{Kind: NotFound})
	cases := map[string]struct {
		err  error
		want Problem
	}{
		"a plain error is ours": {err: errors.New("boom"), want: Problem{Kind: Internal, Title: "Something went wrong",
			Detail: "Something went wrong on our side and the request was not completed. Try again; if it keeps happening, tell the Gantry admins the request id below."}},
		"a sentinel without words takes its kind's": {err: fmt.Errorf("read job: %w", gone), want: Problem{Kind: NotFound, Title: "Not found",
			Detail: "There is nothing here. It may have been removed, or the link is wrong."}},
		"the outermost problem speaks": {err: fmt.Errorf("launch: %w", &wrapping{outer: &denied{"Only leads may."}, inner: gone}),
			want: Problem{Kind: Forbidden, Title: "Not allowed", Detail: "Only leads may."}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, tc.want, Describe(tc.err))
		})
	}
	require.ErrorIs(t, fmt.Errorf("x: %w", gone), gone, "a sentinel compares like errors.New")
}

type wrapping struct{ outer, inner error }

func (w *wrapping) Error() string   { return w.outer.Error() }
func (w *wrapping) Unwrap() []error { return []error{w.outer, w.inner} }
