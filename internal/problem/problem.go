// Package problem is the vocabulary in which an error says how a person
// reads it: its kind (not found, forbidden, conflict, invalid, …) and a
// title and sentence. Domain, store and kube errors implement Error, so the
// web layer maps kinds to HTTP statuses without knowing the packages.
package problem

import "errors"

// Kind is what went wrong, as the person who asked would notice it.
type Kind int

// The kinds of problem. Internal is the zero value: an error that says
// nothing about itself is our fault.
const (
	Internal Kind = iota
	// Invalid: the input is wrong; InvalidFields or InvalidItems may say where.
	Invalid
	// NotFound: there is nothing by that name, or not for this person.
	NotFound
	// Forbidden: the person may not do this.
	Forbidden
	// Conflict: the thing is in a state (or was changed meanwhile) that
	// does not allow this.
	Conflict
	// Unavailable: not possible now; trying again later may work.
	Unavailable
	// Unauthenticated: the request does not say who is asking.
	Unauthenticated
	// BadRequest: the request cannot be answered as sent (a sign-in
	// response out of turn, an action that does not apply).
	BadRequest
	// Upstream: a service this portal depends on refused or failed.
	Upstream
	// TooLarge: the request is larger than this portal reads.
	TooLarge
	// MethodNotAllowed: the address does not take this kind of request.
	MethodNotAllowed
)

// Problem is an error as a person reads it. A Title or Detail left empty
// takes the kind's general words (Words).
type Problem struct {
	Kind   Kind
	Title  string
	Detail string
	// Code is a stable machine-readable name more precise than the kind's,
	// or empty.
	Code string
}

// Error is an error that says itself how a person reads it.
type Error interface {
	error
	Problem() Problem
}

// FieldErrors is an Invalid error that names each input to correct.
type FieldErrors interface {
	InvalidFields() map[string]string
}

// ItemErrors is an Invalid error that lists its problems without fields.
type ItemErrors interface {
	InvalidItems() []string
}

// Words are the kind's general title and sentence, for an error that has
// none of its own.
func Words(k Kind) (title, detail string) {
	switch k {
	case NotFound:
		return "Not found", "There is nothing here. It may have been removed, or the link is wrong."
	case MethodNotAllowed:
		return "Not allowed", "This page does not accept that kind of request."
	case Invalid:
		return "Check your input", ""
	case Forbidden:
		return "Not allowed", ""
	default:
		return "Something went wrong",
			"Something went wrong on our side and the request was not completed. Try again; if it keeps happening, tell the Gantry admins the request id below."
	}
}

// Describe finds the outermost Error in err's chain and returns its
// problem with the kind's words filled in; any other error is Internal.
func Describe(err error) Problem {
	var pe Error
	var p Problem
	if errors.As(err, &pe) {
		p = pe.Problem()
	}
	title, detail := Words(p.Kind)
	if p.Title == "" {
		p.Title = title
	}
	if p.Detail == "" {
		p.Detail = detail
	}
	return p
}

// New returns a sentinel error, compared with errors.Is like one made by
// errors.New: msg is its text for logs, p what a person reads.
func New(msg string, p Problem) error {
	return &sentinel{msg: msg, p: p}
}

type sentinel struct {
	msg string
	p   Problem
}

func (s *sentinel) Error() string    { return s.msg }
func (s *sentinel) Problem() Problem { return s.p }
