package application

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/customerapi/platform/api/apitest"
	"github.com/customerapi/platform/libs/postgres/pgtest"
)

// Answers carry a strong ETag; If-None-Match with it is a 304; of two PATCHes sent at once
// with the same If-Match one is applied and the other is a 412 naming the current ETag; a
// stale If-Match never reaches the service; an action (POST …/publish) is checked against
// its parent; If-Match on a resource that does not exist is a 404.
func TestConditionalRequests(t *testing.T) {
	var version, writes atomic.Int32
	version.Store(1)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/readyz":
		case r.URL.Path == "/v0/topics/missing":
			w.WriteHeader(404)
			_, _ = w.Write([]byte(`{"code":"NOT_FOUND"}`))
		case r.Method == http.MethodGet:
			_, _ = fmt.Fprintf(w, `{"topicId":"t1","version":%d}`, version.Load())
		default:
			writes.Add(1)
			time.Sleep(200 * time.Millisecond) // the second write of a pair arrives meanwhile
			v := version.Add(1)
			_, _ = fmt.Fprintf(w, `{"topicId":"t1","version":%d}`, v)
		}
	}))
	defer up.Close()
	g := start(t, pgtest.NewDatabase(t), map[string]string{"topics": up.URL, "pages": up.URL})
	_, key := g.newKey(t, map[string]any{"tenantIds": []string{"acme"}})
	c := (&apitest.Client{T: t, Base: g.public}).With("x-api-key", key)

	r := c.Do("GET", "/v0/topics/t1", nil)
	etag := r.Header.Get("ETag")
	if r.Status != 200 || len(etag) < 10 || etag[0] != '"' {
		t.Fatalf("a read must carry a strong ETag: %s %q", r, etag)
	}
	if r := c.With("If-None-Match", etag).Do("GET", "/v0/topics/t1", nil); r.Status != 304 || len(r.Body) != 0 || r.Header.Get("ETag") != etag {
		t.Fatalf("If-None-Match with the current ETag: want 304 without a body, got %s", r)
	}
	if r := c.With("If-None-Match", `"other"`).Do("GET", "/v0/topics/t1", nil); r.Status != 200 {
		t.Fatalf("If-None-Match with another ETag: %s", r)
	}

	answers := make([]*apitest.Response, 2)
	var wg sync.WaitGroup
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = c.With("If-Match", etag).Do("PATCH", "/v0/topics/t1", map[string]any{"title": fmt.Sprint(i)})
		}()
	}
	wg.Wait()
	ok, failed := 0, 0
	for _, r := range answers {
		switch r.Status {
		case 200:
			ok++
		case 412:
			failed++
			if code(t, r) != "PRECONDITION_FAILED" || r.Header.Get("ETag") == "" || r.Header.Get("ETag") == etag {
				t.Errorf("a 412 names the current ETag: %s (ETag %q)", r, r.Header.Get("ETag"))
			}
		}
	}
	if ok != 1 || failed != 1 || writes.Load() != 1 {
		t.Fatalf("two PATCHes with one If-Match: %d applied, %d refused, %d writes; want 1, 1, 1 (%s; %s)", ok, failed, writes.Load(), answers[0], answers[1])
	}
	if r := c.With("If-Match", etag).Do("DELETE", "/v0/topics/t1", nil); r.Status != 412 || writes.Load() != 1 {
		t.Fatalf("a stale If-Match must not reach the service: %s", r)
	}

	current := c.Do("GET", "/v0/pages/p1", nil).Header.Get("ETag")
	if r := c.With("If-Match", `"stale"`).Do("POST", "/v0/pages/p1/publish", map[string]any{}); r.Status != 412 {
		t.Fatalf("an action is checked against its parent: %s", r)
	}
	if r := c.With("If-Match", current).Do("POST", "/v0/pages/p1/publish", map[string]any{}); r.Status != 200 || writes.Load() != 2 {
		t.Fatalf("an action with its parent's current ETag: %s", r)
	}
	if r := c.With("If-Match", "*").Do("PATCH", "/v0/topics/missing", map[string]any{}); r.Status != 404 || writes.Load() != 2 {
		t.Fatalf("If-Match on a resource that does not exist: %s", r)
	}
}
