package e2e

import (
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	apidoc "github.com/customerapi/platform/api"
	"github.com/customerapi/platform/api/apitest"
)

// Against the whole system: a read-only key (scopes ["*:read"]) gets 403 on every write
// operation of the document, found from the document, and reads; a key past its
// expiresAt gets 401.
func TestReadOnlyAndExpiredKeys(t *testing.T) {
	c := api(t, newKey(t, map[string]any{"scopes": []string{"*:read"}}))
	doc, err := openapi3.NewLoader().LoadFromData(apidoc.Spec)
	if err != nil {
		t.Fatal(err)
	}
	param := regexp.MustCompile(`\{[^}]+\}`)
	n := 0
	for _, path := range sortedPaths(doc) {
		for method, op := range doc.Paths.Value(path).Operations() {
			if op.Security != nil && len(*op.Security) == 0 || method == http.MethodGet || method == http.MethodHead {
				continue
			}
			n++
			r := c.Do(method, param.ReplaceAllString(path, "x"), apitest.Raw(`{}`))
			if d := apitest.ErrorDetails(r); r.Status != 403 || d["missingScope"] != op.Tags[0]+":write" {
				t.Errorf("%s %s with a read-only key: want 403 missing %s:write, got %s", method, path, op.Tags[0], r)
			}
		}
	}
	if n < 30 {
		t.Fatalf("only %d write operations", n)
	}
	must2(t, c.Do("GET", "/v0/topics", nil), 200)

	expiring := api(t, newKey(t, map[string]any{"expiresAt": time.Now().Add(time.Second).UTC().Format(time.RFC3339Nano)}))
	must2(t, expiring.Do("GET", "/v0/topics", nil), 200)
	time.Sleep(1100 * time.Millisecond)
	if r := expiring.Do("GET", "/v0/topics", nil); r.Status != 401 {
		t.Fatalf("an expired key: want 401, got %s", r)
	}
}
