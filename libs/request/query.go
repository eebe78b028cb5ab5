package request

import (
	"bytes"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"github.com/customerapi/platform/libs/apierror"
	"github.com/customerapi/platform/libs/timestamp"
)

// Query reads query parameters and collects every problem, so one response lists them
// all. Unknown parameters are ignored; a known parameter given twice is an error.
type Query struct {
	c      *fiber.Ctx
	issues []apierror.Issue
}

// NewQuery starts reading the query parameters of c.
func NewQuery(c *fiber.Ctx) *Query { return &Query{c: c} }

// Fail records an issue with parameter name; the same issue twice is recorded once.
func (q *Query) Fail(name, code, message string) {
	for _, is := range q.issues {
		if is.Code == code && is.Message == message && len(is.Path) == 1 && is.Path[0] == name {
			return // a parameter read twice reports its problem once
		}
	}
	q.issues = append(q.issues, apierror.Issue{Code: code, Message: message, Path: []any{name}})
}

// Raw returns the parameter's value and whether it was given (once).
func (q *Query) Raw(name string) (string, bool) {
	args := q.c.Context().QueryArgs()
	vals := args.PeekMulti(name)
	switch len(vals) {
	case 0:
		return "", false
	case 1:
		// PostgreSQL stores neither NUL nor invalid UTF-8: refuse them here, once for
		// every service, rather than as a database error later.
		if !utf8.Valid(vals[0]) || bytes.IndexByte(vals[0], 0) >= 0 {
			q.Fail(name, "invalid_string", "Expected UTF-8 text without NUL characters")
			return "", false
		}
		return string(vals[0]), true
	}
	q.Fail(name, "invalid_type", "Expected a single value, received several")
	return "", false
}

// String returns the parameter's value, or "" when absent.
func (q *Query) String(name string) string {
	v, _ := q.Raw(name)
	return v
}

// Bool reads "true" or "false" (also "1"/"0"); absent or empty is false.
func (q *Query) Bool(name string) bool {
	v, ok := q.Raw(name)
	if !ok || v == "" {
		return false
	}
	switch strings.ToLower(v) {
	case "true", "1":
		return true
	case "false", "0":
		return false
	}
	q.Fail(name, "invalid_type", "Expected boolean (true or false), received '"+v+"'")
	return false
}

// Enum reads a value that must be one of allowed; absent gives "".
func (q *Query) Enum(name string, allowed ...string) string {
	v, ok := q.Raw(name)
	if !ok {
		return ""
	}
	for _, a := range allowed {
		if v == a {
			return v
		}
	}
	q.Fail(name, "invalid_enum_value", "Invalid enum value. Expected '"+strings.Join(allowed, "' | '")+"', received '"+v+"'")
	return ""
}

// Time reads an RFC 3339 date-time (or a bare date); absent gives nil.
func (q *Query) Time(name string) *time.Time {
	v, ok := q.Raw(name)
	if !ok {
		return nil
	}
	t, err := timestamp.Parse(v)
	if err != nil {
		q.Fail(name, "invalid_string", "Invalid datetime: expected an RFC 3339 date-time")
		return nil
	}
	return &t
}

// Issues returns the issues recorded so far.
func (q *Query) Issues() []apierror.Issue { return q.issues }

// Err returns a VALIDATION_ERROR for the query when any issue was recorded, else nil.
func (q *Query) Err() error {
	if len(q.issues) == 0 {
		return nil
	}
	return apierror.Validation(apierror.FieldQuery, q.issues...)
}

// TextPath refuses a request whose path is not UTF-8 text without NUL characters: no
// stored resource has such an ID, and PostgreSQL would refuse it as a parameter (a 500).
// The answer is 404, the same as for any ID that names nothing.
func TextPath() fiber.Handler {
	return func(c *fiber.Ctx) error {
		p := c.Path() // as routed: the path parameters are cut from it
		if !utf8.ValidString(p) || strings.IndexByte(p, 0) >= 0 {
			return apierror.NotFound("no resource has this path")
		}
		return c.Next()
	}
}
