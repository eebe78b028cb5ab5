// Package apierror defines the API's error envelope and maps every failure onto it.
package apierror

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Code is one of the error codes of the specification, or METHOD_NOT_ALLOWED.
type Code string

// The error codes of the specification, and METHOD_NOT_ALLOWED, which the platform adds
// for 405 (docs/api.md).
const (
	CodeUnauthorized       Code = "UNAUTHORIZED"
	CodeForbidden          Code = "FORBIDDEN"
	CodeNotFound           Code = "NOT_FOUND"
	CodeValidation         Code = "VALIDATION_ERROR"
	CodeConflict           Code = "CONFLICT"
	CodeRateLimited        Code = "RATE_LIMITED"
	CodeInternal           Code = "INTERNAL"
	CodeServiceUnavailable Code = "SERVICE_UNAVAILABLE"
	CodeMethodNotAllowed   Code = "METHOD_NOT_ALLOWED"
	// CodePreconditionFailed is the 412 of a conditional request (If-Match) whose
	// resource has changed.
	CodePreconditionFailed Code = "PRECONDITION_FAILED"
)

// Request parts named by FieldIssues.Field.
const (
	FieldBody  = "body"
	FieldQuery = "query"
	FieldPath  = "path"
	// FieldHeader names a request header (Idempotency-Key, If-Match).
	FieldHeader = "header"
)

// Error is a failure with its HTTP status, code, human-readable detail and optional
// structured details. Handlers return it; the error handler renders it.
type Error struct {
	Status  int
	Code    Code
	Detail  string
	Details any
	// Headers are extra response headers (Retry-After, Allow, ...).
	Headers map[string]string
	cause   error
}

// Error implements error.
func (e *Error) Error() string {
	if e.cause != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Detail, e.cause)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Detail)
}

// Unwrap returns the underlying cause, if any.
func (e *Error) Unwrap() error { return e.cause }

// WithHeader returns e with an extra response header.
func (e *Error) WithHeader(name, value string) *Error {
	if e.Headers == nil {
		e.Headers = map[string]string{}
	}
	e.Headers[name] = value
	return e
}

// WithDetails returns e with structured details.
func (e *Error) WithDetails(details any) *Error {
	e.Details = details
	return e
}

// WithCause returns e wrapping cause (logged, never shown; errors.Is and As see it).
func (e *Error) WithCause(cause error) *Error {
	e.cause = cause
	return e
}

// New returns an Error with the given status, code and detail.
func New(status int, code Code, detail string) *Error {
	return &Error{Status: status, Code: code, Detail: detail}
}

// Unauthorized is the spec's 401 for missing or invalid credentials.
func Unauthorized() *Error {
	return New(http.StatusUnauthorized, CodeUnauthorized, "authentication is required")
}

// Forbidden is a 403 with the given detail.
func Forbidden(detail string) *Error { return New(http.StatusForbidden, CodeForbidden, detail) }

// NotFound is a 404 with the given detail.
func NotFound(detail string) *Error { return New(http.StatusNotFound, CodeNotFound, detail) }

// NotFoundf is a 404 with a formatted detail.
func NotFoundf(format string, args ...any) *Error { return NotFound(fmt.Sprintf(format, args...)) }

// Conflict is a 409 with the given detail.
func Conflict(detail string) *Error { return New(http.StatusConflict, CodeConflict, detail) }

// TooManyAtOnce is the 429 of a cap on requests in flight at once (uploads, downloads):
// RATE_LIMITED with Retry-After, in seconds, when a slot may be free again.
func TooManyAtOnce(detail, retryAfter string) *Error {
	return New(http.StatusTooManyRequests, CodeRateLimited, detail).WithHeader("Retry-After", retryAfter)
}

// Unavailable is a 503 with the given detail.
func Unavailable(detail string) *Error {
	return New(http.StatusServiceUnavailable, CodeServiceUnavailable, detail)
}

// Internal is a 500 wrapping an unexpected cause; the cause is logged, never shown. A
// cause that says a dependency is down (IsUnavailable) is a 503 instead, and a cause
// that holds a Rejection is the caller's fault, not ours: it becomes that 400.
func Internal(cause error) *Error {
	if e := unavailable(cause); e != nil {
		return e
	}
	var r Rejection
	if errors.As(cause, &r) {
		code, message := r.Rejection()
		e := Validation(FieldBody, Issue{Code: code, Message: message, Path: []any{}})
		e.cause = cause
		return e
	}
	return &Error{Status: http.StatusInternalServerError, Code: CodeInternal,
		Detail: "an unexpected error occurred", cause: cause}
}

// Rejection is implemented by errors found below the HTTP layer that mean the request
// cannot be accepted as sent, such as an event too large for Kafka (events.TooLargeError):
// however a handler wraps one, even as Internal, it is rendered as a 400
// VALIDATION_ERROR on the body with this issue code and message.
type Rejection interface {
	error
	Rejection() (code, message string)
}

// Issue is one validation problem at a path inside a request part.
type Issue struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Path    []any  `json:"path"`
}

// MaxIssues is the most issues an error lists; further ones are only counted, so that a
// body of a million bad items cannot make an answer of tens of megabytes.
const MaxIssues = 100

// FieldIssues groups the issues of one request part (body, query or path).
type FieldIssues struct {
	Field  string  `json:"field"`
	Issues []Issue `json:"issues"`
	// Omitted counts the issues found beyond MaxIssues and left out of Issues.
	Omitted int `json:"omittedIssues,omitempty"`
}

// Validation is a 400 VALIDATION_ERROR carrying the issues found (the first MaxIssues
// of them; the rest are counted).
func Validation(field string, issues ...Issue) *Error {
	return ValidationOmitting(field, 0, issues...)
}

// ValidationOmitting is Validation for a caller that stopped recording issues at some
// point and counted omitted more.
func ValidationOmitting(field string, omitted int, issues ...Issue) *Error {
	if len(issues) > MaxIssues {
		omitted += len(issues) - MaxIssues
		issues = issues[:MaxIssues:MaxIssues]
	}
	return &Error{Status: http.StatusBadRequest, Code: CodeValidation,
		Detail:  summary(field, issues, omitted),
		Details: []FieldIssues{{Field: field, Issues: issues, Omitted: omitted}}}
}

// InvalidParam is a 400 for one bad path or query parameter.
func InvalidParam(field, name, code, message string) *Error {
	return Validation(field, Issue{Code: code, Message: message, Path: []any{name}})
}

func summary(field string, issues []Issue, omitted int) string {
	if len(issues) == 0 {
		return "the request " + field + " is invalid"
	}
	first := issues[0]
	where := field
	if len(first.Path) > 0 {
		parts := make([]string, len(first.Path))
		for i, p := range first.Path {
			parts[i] = fmt.Sprint(p)
		}
		where = field + "." + strings.Join(parts, ".")
	}
	if more := len(issues) - 1 + omitted; more > 0 {
		return fmt.Sprintf("invalid %s: %s (and %d more issues)", where, first.Message, more)
	}
	return fmt.Sprintf("invalid %s: %s", where, first.Message)
}

// As returns the *Error inside err, or nil.
func As(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return nil
}
