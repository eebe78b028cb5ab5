package e2e

import (
	"testing"

	"github.com/customerapi/platform/api/apitest"
)

func rawBody(s string) apitest.Raw { return apitest.Raw(s) }

func must2(t *testing.T, r *apitest.Response, status int) *apitest.Response {
	t.Helper()
	must(t, r, status)
	return r
}

// decode fails the test unless r has the status, and decodes its body strictly into the
// API's generated type T (api/apitypes): a changed shape fails the test, it does not panic.
func decode[T any](t *testing.T, r *apitest.Response, status int) T {
	t.Helper()
	return apitest.Decode[T](t, r, status, "an answer of the documented shape")
}
