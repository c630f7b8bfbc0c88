package quota

import (
	"errors"
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

// Is makes errors.Is(err, ErrDenied) true.
func (e *DeniedError) Is(target error) bool { return target == ErrDenied }

func denied(reason string) error { return &DeniedError{Reason: reason} }
