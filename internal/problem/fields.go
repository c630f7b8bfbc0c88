package problem

import (
	"maps"
	"slices"
	"strings"
)

// Fields are problems with what a person typed, one sentence per form
// field. The empty key holds problems not tied to a field. It is shown to
// users as is.
type Fields map[string]string

// Problem is Invalid with the sentences.
func (e Fields) Problem() Problem {
	return Problem{Kind: Invalid, Title: "Check your input", Detail: e.Error()}
}

// InvalidFields names the fields to correct.
func (e Fields) InvalidFields() map[string]string { return e }

// Error joins the sentences, sorted by field.
func (e Fields) Error() string { return strings.Join(e.Sentences(), " ") }

// Sentences are the sentences, sorted by field.
func (e Fields) Sentences() []string {
	out := make([]string, 0, len(e))
	for _, k := range slices.Sorted(maps.Keys(e)) {
		out = append(out, e[k])
	}
	return out
}

// Add records msg for field unless the field already has a problem.
func (e Fields) Add(field, msg string) {
	if _, ok := e[field]; !ok {
		e[field] = msg
	}
}
