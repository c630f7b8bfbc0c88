package quota

import (
	"errors"

	"github.com/gantry-dev/gantry/internal/problem"
)

// Form fields of a quota request, also the keys of the problem.Fields its
// refusals for input give.
const (
	FieldTeam     = "team"
	FieldFlavor   = "flavor"
	FieldResource = "resource"
	FieldDelta    = "delta"
	FieldUntil    = "until"
	FieldReason   = "reason"
	FieldComment  = "comment"
)

// ErrDenied matches every refusal of a decision or withdrawal; errors.As a
// *DeniedError gives the reason in words.
var ErrDenied = errors.New("not allowed")

// DeniedError says in a sentence why the user may not do this.
type DeniedError struct {
	Reason string
}

// Error returns the reason.
func (e *DeniedError) Error() string { return e.Reason }

// Problem words the refusal.
func (e *DeniedError) Problem() problem.Problem {
	return problem.Problem{Kind: problem.Forbidden, Title: "Not allowed", Detail: e.Reason}
}

// Is makes errors.Is(err, ErrDenied) true.
func (e *DeniedError) Is(target error) bool { return target == ErrDenied }

func denied(reason string) error { return &DeniedError{Reason: reason} }
