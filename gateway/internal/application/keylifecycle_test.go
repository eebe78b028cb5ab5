package application

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/customerapi/platform/api"
	"github.com/customerapi/platform/api/apitest"
	"github.com/customerapi/platform/libs/postgres/pgtest"
)

// counting is an upstream that answers 200 {} to everything and counts what reaches it.
func counting(t *testing.T) (*httptest.Server, *atomic.Int32) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" {
			n.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{}`))
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// allUpstreams points every service at srv.
func allUpstreams(srv *httptest.Server) map[string]string {
	return map[string]string{"topics": srv.URL, "pages": srv.URL, "persons": srv.URL, "assets": srv.URL, "webhooks": srv.URL}
}

// A read-only key ("*:read") gets 403 FORBIDDEN naming the missing scope on every write
// operation of the document, which never reaches a service, and is served on reads; a
// key scoped to one family is refused the others.
func TestKeyScopesFromTheDocument(t *testing.T) {
	up, hits := counting(t)
	g := start(t, pgtest.NewDatabase(t), allUpstreams(up))
	_, readOnly := g.newKey(t, map[string]any{"tenantIds": []string{"acme"}, "scopes": []string{"*:read"}})
	c := (&apitest.Client{T: t, Base: g.public}).With("x-api-key", readOnly)
	doc, err := openapi3.NewLoader().LoadFromData(api.Spec)
	if err != nil {
		t.Fatal(err)
	}
	param := regexp.MustCompile(`\{[^}]+\}`)
	paths := doc.Paths.InMatchingOrder()
	sort.Strings(paths)
	writes := 0
	for _, path := range paths {
		for method, op := range doc.Paths.Value(path).Operations() {
			if op.Security != nil && len(*op.Security) == 0 || method == http.MethodGet || method == http.MethodHead {
				continue
			}
			writes++
			r := c.With("Content-Type", "application/json").Do(method, param.ReplaceAllString(path, "x"), apitest.Raw(`{}`))
			want := op.Tags[0] + ":write"
			if d := apitest.ErrorDetails(r); r.Status != 403 || code(t, r) != "FORBIDDEN" || d["missingScope"] != want {
				t.Errorf("%s %s with a read-only key: want 403 missing %s, got %s", method, path, want, r)
			}
		}
	}
	if writes < 30 || hits.Load() != 0 {
		t.Fatalf("%d write operations checked, %d reached a service; want over 30 and none", writes, hits.Load())
	}
	if r := c.Do("GET", "/v0/pages", nil); r.Status != 200 || hits.Load() != 1 {
		t.Fatalf("a read with a read-only key: %s", r)
	}
	_, pagesOnly := g.newKey(t, map[string]any{"tenantIds": []string{"acme"}, "scopes": []string{"pages:write"}})
	p := (&apitest.Client{T: t, Base: g.public}).With("x-api-key", pagesOnly)
	if r := p.Do("GET", "/v0/topics", nil); r.Status != 403 || !strings.Contains(string(r.Body), "topics:read") {
		t.Fatalf("a pages key reading topics: %s", r)
	}
	if r := p.Do("PATCH", "/v0/pages/x", apitest.Raw(`{}`)); r.Status != 200 {
		t.Fatalf("a pages:write key writing a page: %s", r)
	}
	for _, bad := range [][]string{{"pages:admin"}, {"billing:read"}, {}, {"pages:read", "pages:read"}} {
		if r := g.adminClient(t).Do("POST", "/admin/v0/keys", map[string]any{"tenantIds": []string{"acme"}, "scopes": bad}); r.Status != 400 {
			t.Errorf("scopes %q: want 400, got %s", bad, r)
		}
	}
}

// A key with expiresAt works until then and is refused (401) from then on; rotation gives
// a new secret while the old one keeps working for its grace period on every replica,
// then stops on every replica; lastUsedAt shows the key's use without a write per
// request.
func TestKeyExpiryRotationAndLastUse(t *testing.T) {
	up, _ := counting(t)
	db := pgtest.NewDatabase(t)
	g1 := start(t, db, allUpstreams(up))
	g2 := start(t, db, allUpstreams(up))
	get := func(g *gw, key string) int {
		return (&apitest.Client{T: t, Base: g.public}).With("x-api-key", key).Do("GET", "/v0/topics", nil).Status
	}
	eventually := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("not within 10 s: %s", what)
			}
		}
	}

	soon := time.Now().Add(1500 * time.Millisecond).UTC().Format(time.RFC3339Nano)
	_, expiring := g1.newKey(t, map[string]any{"tenantIds": []string{"acme"}, "expiresAt": soon})
	eventually("the expiring key works on both replicas", func() bool { return get(g1, expiring) == 200 && get(g2, expiring) == 200 })
	eventually("the expired key is refused on both replicas", func() bool { return get(g1, expiring) == 401 && get(g2, expiring) == 401 })
	if r := g1.adminClient(t).Do("POST", "/admin/v0/keys", map[string]any{"tenantIds": []string{"acme"}, "expiresAt": "2001-01-01T00:00:00Z"}); r.Status != 400 {
		t.Fatalf("an expiresAt in the past: want 400, got %s", r)
	}

	id, old := g1.newKey(t, map[string]any{"tenantIds": []string{"acme"}, "scopes": []string{"topics:read"}, "name": "ci"})
	eventually("the key works on both replicas", func() bool { return get(g1, old) == 200 && get(g2, old) == 200 })
	r := g1.adminClient(t).Do("POST", "/admin/v0/keys/"+id+"/rotate", map[string]any{"gracePeriodSeconds": 2})
	m := r.Map()
	fresh, _ := m["key"].(string)
	if r.Status != 201 || fresh == "" || fresh == old || m["rotatedFrom"] != id || m["name"] != "ci" || len(m["scopes"].([]any)) != 1 {
		t.Fatalf("rotate: %s", r)
	}
	eventually("the new key works on both replicas", func() bool { return get(g1, fresh) == 200 && get(g2, fresh) == 200 })
	if get(g1, old) != 200 || get(g2, old) != 200 {
		t.Fatal("the old key must keep working during its grace period")
	}
	eventually("the old key is refused on both replicas after its grace period", func() bool { return get(g1, old) == 401 && get(g2, old) == 401 })
	if get(g1, fresh) != 200 {
		t.Fatal("the new key must keep working")
	}
	if r := g1.adminClient(t).Do("POST", "/admin/v0/keys/"+id+"/rotate", map[string]any{}); r.Status != 409 {
		t.Fatalf("rotating an expired key: want 409, got %s", r)
	}
	eventually("lastUsedAt of the old key", func() bool {
		v, _ := g2.adminClient(t).Do("GET", "/admin/v0/keys/"+id, nil).Map()["lastUsedAt"].(string)
		return v != ""
	})
}
