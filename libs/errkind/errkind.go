// Package errkind classifies a domain's errors by what a caller can do about them, with
// no notion of HTTP: a domain declares its errors with a kind (NotFound, Conflict,
// Invalid), and libs/apierror maps every kind to its status in one place (apierror.From),
// so that services need no error switch of their own.
package errkind

import "errors"

// Kind is what a failure means to the caller.
type Kind int

// The kinds of domain errors.
const (
	// Internal is not a domain error: a failure the caller cannot fix.
	Internal Kind = iota
	// NotFound: the thing does not exist (for this tenant).
	NotFound
	// Conflict: the current state forbids the change (retrying later may succeed).
	Conflict
	// Invalid: the input breaks a rule that the document's schema cannot express.
	Invalid
)

// Error is a domain error of a kind. Its message is written for the API's client: it is
// the detail of the answer.
type Error struct {
	kind Kind
	msg  string
	// Path locates the input an Invalid error is about (e.g. "actions", 2, "actionId").
	Path []any
}

// New returns an error of the kind with a message for the API's client.
func (k Kind) New(msg string) *Error { return &Error{kind: k, msg: msg} }

// At returns an Invalid-style error of the kind about the input at path.
func (k Kind) At(msg string, path ...any) *Error { return &Error{kind: k, msg: msg, Path: path} }

// Error implements error.
func (e *Error) Error() string { return e.msg }

// Kind returns the error's kind.
func (e *Error) Kind() Kind { return e.kind }

// Of returns the first *Error in err's chain, or nil.
func Of(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return nil
}
