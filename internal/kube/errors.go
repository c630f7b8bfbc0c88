package kube

import (
	"errors"
	"net"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"

	"github.com/gantry-dev/gantry/internal/problem"
)

// Kinds of API errors callers branch on. Test with errors.Is(err, kube.ErrNotFound).
var (
	ErrNotFound  = problem.New("not found", problem.Problem{Kind: problem.NotFound})
	ErrForbidden = problem.New("forbidden", problem.Problem{Kind: problem.Forbidden, Title: "Refused by the cluster",
		Detail: "Kubernetes refused this change: your role does not allow it."})
	ErrConflict = problem.New("conflict", problem.Problem{Kind: problem.Conflict, Title: "Changed meanwhile",
		Detail: "Someone changed this at the same time. Reload the page and try again."})
	// ErrUnreachable means the API server did not answer, so nothing was
	// changed; code cluster_unreachable.
	ErrUnreachable = problem.New("kubernetes API server unreachable", problem.Problem{Kind: problem.Unavailable, Title: "Cluster not answering",
		Detail: "The Kubernetes API server is not answering, so nothing was changed. Try again in a minute; the job pages say when it answers again.",
		Code:   "cluster_unreachable"})
	// ErrNotSynced means the informer cache has not completed its first list,
	// so an empty answer would be a guess.
	ErrNotSynced = problem.New("cluster cache not synced yet", problem.Problem{Kind: problem.Unavailable, Title: "Still starting",
		Detail: "The portal is still reading the cluster. Try again in a few seconds."})
)

// APIError is an API server error classified by kind. It unwraps to the
// original error, so apierrors helpers keep working on it.
type APIError struct {
	// Kind is one of ErrNotFound, ErrForbidden, ErrConflict or ErrUnreachable.
	Kind error
	// Err is the error returned by the API server.
	Err error
}

// Error returns the API server's message.
func (e *APIError) Error() string { return e.Err.Error() }

// Unwrap returns the original API server error.
func (e *APIError) Unwrap() error { return e.Err }

// As finds target in the error's kind, so its words reach the person.
func (e *APIError) As(target any) bool { return errors.As(e.Kind, target) }

// Is reports whether target is the error's kind.
func (e *APIError) Is(target error) bool { return target == e.Kind }

// MapError classifies an API server error: NotFound, Forbidden and Conflict
// (including AlreadyExists, which is a conflict on create) become *APIError
// with the matching kind, and a request the server never answered
// (connection refused or reset, a timeout) one of kind ErrUnreachable; any
// other error is returned unchanged.
func MapError(err error) error {
	if err == nil {
		return nil
	}
	var kind error
	switch {
	case apierrors.IsNotFound(err):
		kind = ErrNotFound
	case apierrors.IsForbidden(err):
		kind = ErrForbidden
	case apierrors.IsConflict(err), apierrors.IsAlreadyExists(err):
		kind = ErrConflict
	case unanswered(err):
		kind = ErrUnreachable
	default:
		return err
	}
	return &APIError{Kind: kind, Err: err}
}

// unanswered reports an error of a request the API server never answered.
func unanswered(err error) bool {
	var netErr net.Error
	return utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err) ||
		(errors.As(err, &netErr) && netErr.Timeout())
}
