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
