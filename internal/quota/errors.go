package quota

import (
	"errors"
	"github.com/gantry-dev/gantry/internal/problem"
	"maps"
	"slices"
	"strings"
)

// Form fields of a quota request, also the keys of ValidationError.Fields.
const (
	FieldTeam     = "team"
	FieldFlavor   = "flavor"
	FieldResource = "resource"
	FieldDelta    = "delta"
	FieldUntil    = "until"
	FieldReason   = "reason"
	FieldComment  = "comment"
)

// ValidationError is input a person must correct; every message is a
// sentence meant for them.
type ValidationError struct {
	Fields map[string]string
}

// Problem is Invalid with the sentences.
func (e *ValidationError) Problem() problem.Problem {
	return problem.Problem{Kind: problem.Invalid, Title: "Check your input", Detail: e.Error()}
}

// InvalidFields names the fields to correct.
func (e *ValidationError) InvalidFields() map[string]string { return e.Fields }

// Error joins the messages.
func (e *ValidationError) Error() string {
	keys := slices.Sorted(maps.Keys(e.Fields))
	msgs := make([]string, 0, len(keys))
	for _, k := range keys {
		msgs = append(msgs, e.Fields[k])
	}
	return strings.Join(msgs, " ")
}

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
