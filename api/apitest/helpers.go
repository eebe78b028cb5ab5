package apitest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
)

// MustLoad is Load for package-level variables of tests: it panics when the document
// does not load.
func MustLoad() *Contract {
	c, err := Load()
	if err != nil {
		panic(err)
	}
	return c
}

// MustStatus fails the test unless r has the given status, and returns its body as a
// JSON object (nil when it is not one).
func MustStatus(t testing.TB, r *Response, status int) map[string]any {
	t.Helper()
	ExpectStatus(t, r, status, "unexpected status")
	return r.Map()
}

// IssueCodes lists the issues of an error envelope as "field:code:path" strings.
func IssueCodes(r *Response) []string {
	var env struct {
		Details []struct {
			Field  string `json:"field"`
			Issues []struct {
				Code string `json:"code"`
				Path []any  `json:"path"`
			} `json:"issues"`
		} `json:"details"`
	}
	_ = r.JSON(&env)
	var out []string
	for _, d := range env.Details {
		for _, is := range d.Issues {
			out = append(out, fmt.Sprintf("%s:%s:%v", d.Field, is.Code, is.Path))
		}
	}
	return out
}

// ErrorDetails returns the object details of an error answer (RATE_LIMITED's state,
// UNAUTHORIZED's reason, FORBIDDEN's missingScope, a CONFLICT's reason), or nil when the
// answer has none or they are not an object.
func ErrorDetails(r *Response) map[string]any {
	var env struct {
		Details map[string]any `json:"details"`
	}
	if json.Unmarshal(r.Body, &env) != nil {
		return nil
	}
	return env.Details
}

// ErrorEnvelope is the spec's error envelope, as a test decodes it.
type ErrorEnvelope struct {
	Code      string          `json:"code"`
	Detail    string          `json:"detail"`
	Details   json.RawMessage `json:"details"`
	RequestID string          `json:"requestId"`
	Status    int             `json:"status"`
	Title     string          `json:"title"`
	Type      string          `json:"type"`
}

// ExpectStatus fails the test unless r has status want; rule is the requirement the
// status shows, as the failure message states it.
func ExpectStatus(t testing.TB, r *Response, want int, rule string) {
	t.Helper()
	if r.Status != want {
		t.Fatalf("%s: want status %d, got %s", rule, want, r)
	}
}

// Decode fails the test unless r has status want, and decodes its body into a T,
// refusing fields T does not have.
func Decode[T any](t testing.TB, r *Response, want int, rule string) T {
	t.Helper()
	ExpectStatus(t, r, want, rule)
	v, err := DecodeBody[T](r)
	if err != nil {
		t.Fatalf("%s: the %d body does not decode as %T: %v\n%s", rule, r.Status, v, err, r.Body)
	}
	return v
}

// DecodeBody decodes r's body into a T, refusing fields T does not have (for goroutines,
// which must not stop the test).
func DecodeBody[T any](r *Response) (T, error) {
	var v T
	dec := json.NewDecoder(bytes.NewReader(r.Body))
	dec.DisallowUnknownFields()
	return v, dec.Decode(&v)
}

// ExpectError fails the test unless r is an error of the given status and code, and
// returns its envelope.
func ExpectError(t testing.TB, r *Response, status int, code, rule string) ErrorEnvelope {
	t.Helper()
	env := Decode[ErrorEnvelope](t, r, status, rule)
	if env.Code != code || env.Status != status {
		t.Fatalf("%s: want code %s in a %d envelope, got %s in %d: %s", rule, code, status, env.Code, env.Status, r.Body)
	}
	return env
}

// ExpectNotFound is ExpectError for a 404.
func ExpectNotFound(t testing.TB, r *Response, rule string) {
	t.Helper()
	ExpectError(t, r, 404, "NOT_FOUND", rule)
}

// CheckIssues reports (without stopping the test) unless r is a 400 validation error
// whose issues are exactly want ("field:code:path", space-separated).
func CheckIssues(t testing.TB, r *Response, want, rule string) {
	t.Helper()
	if got := fmt.Sprint(IssueCodes(r)); r.Status != 400 || got != "["+want+"]" {
		t.Errorf("%s: want 400 with exactly the issues [%s], got %d %s", rule, want, r.Status, got)
	}
}
