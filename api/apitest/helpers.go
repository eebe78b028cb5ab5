package apitest

import (
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
	if r.Status != status {
		t.Fatalf("status %d, want %d: %s", r.Status, status, r.Body)
	}
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
