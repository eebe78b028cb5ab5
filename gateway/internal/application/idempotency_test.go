package application

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/customerapi/platform/api/apitest"
	"github.com/customerapi/platform/libs/postgres/pgtest"
)

// A POST with an Idempotency-Key runs once per tenant and key: five sent at once reach the
// service once, and each answer is that one answer byte for byte or a 409 "in flight"; a
// later retry is the stored answer, marked replayed; the key with another body is a 409;
// another tenant's same key is its own; a 503 is not kept, so its retry runs; a key that
// is not 1 to 255 printable characters is a 400.
func TestIdempotencyKey(t *testing.T) {
	var runs atomic.Int32
	var fail atomic.Bool
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" {
			return
		}
		if fail.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		n := runs.Add(1)
		time.Sleep(300 * time.Millisecond) // long enough for the others to arrive meanwhile
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Location", fmt.Sprintf("/v0/topics/topic_%d", n))
		w.WriteHeader(http.StatusCreated)
		_, _ = fmt.Fprintf(w, `{"topicId":"topic_%d","run":%d}`, n, n)
	}))
	defer up.Close()
	g := start(t, pgtest.NewDatabase(t), map[string]string{"topics": up.URL})
	_, key := g.newKey(t, map[string]any{"tenantIds": []string{"acme"}})
	_, other := g.newKey(t, map[string]any{"tenantIds": []string{"globex"}})
	post := func(apiKey, idem, body string) *apitest.Response {
		c := (&apitest.Client{T: t, Base: g.public}).With("x-api-key", apiKey)
		if idem != "" {
			c = c.With("Idempotency-Key", idem)
		}
		return c.Do("POST", "/v0/topics", apitest.Raw(body))
	}

	answers := make([]*apitest.Response, 5)
	var wg sync.WaitGroup
	for i := range answers {
		wg.Add(1)
		go func() { defer wg.Done(); answers[i] = post(key, "key-1", `{"title":"Pricing"}`) }()
	}
	wg.Wait()
	var first *apitest.Response
	for _, r := range answers {
		switch r.Status {
		case 201:
			if first != nil && string(first.Body) != string(r.Body) {
				t.Errorf("two answers for one key: %s and %s", first.Body, r.Body)
			}
			first = r
		case 409:
			if d := apitest.ErrorDetails(r); d["reason"] != "idempotency_key_in_flight" || r.Header.Get("Retry-After") == "" {
				t.Errorf("a retry in flight: want 409 idempotency_key_in_flight with Retry-After, got %s", r)
			}
		default:
			t.Errorf("concurrent POSTs with one key: %s", r)
		}
	}
	if runs.Load() != 1 || first == nil {
		t.Fatalf("five POSTs with one key ran %d times (an answer: %v)", runs.Load(), first)
	}

	r := post(key, "key-1", `{"title":"Pricing"}`)
	if r.Status != 201 || string(r.Body) != string(first.Body) || r.Header.Get("Idempotent-Replayed") != "true" ||
		r.Header.Get("Location") != first.Header.Get("Location") || runs.Load() != 1 {
		t.Fatalf("a retry must be the stored answer, replayed: %s (Idempotent-Replayed %q, runs %d)", r, r.Header.Get("Idempotent-Replayed"), runs.Load())
	}
	if first.Header.Get("Idempotent-Replayed") != "" {
		t.Fatal("the first answer is not a replay")
	}
	r = post(key, "key-1", `{"title":"Other"}`)
	if d := apitest.ErrorDetails(r); r.Status != 409 || d["reason"] != "idempotency_key_reused" || runs.Load() != 1 {
		t.Fatalf("the key with another body: want 409 idempotency_key_reused, got %s", r)
	}
	if r := post(other, "key-1", `{"title":"Pricing"}`); r.Status != 201 || r.Header.Get("Idempotent-Replayed") != "" || runs.Load() != 2 {
		t.Fatalf("another tenant's same key is its own request: %s, runs %d", r, runs.Load())
	}
	if r := post(key, "", `{"title":"Pricing"}`); r.Status != 201 || runs.Load() != 3 {
		t.Fatalf("without a key every POST runs: %s", r)
	}

	fail.Store(true)
	if r := post(key, "key-2", `{"title":"Pricing"}`); r.Status != 503 {
		t.Fatalf("the service down: %s", r)
	}
	fail.Store(false)
	if r := post(key, "key-2", `{"title":"Pricing"}`); r.Status != 201 || r.Header.Get("Idempotent-Replayed") != "" || runs.Load() != 4 {
		t.Fatalf("a 503 is not kept: its retry must run, got %s (runs %d)", r, runs.Load())
	}

	for _, bad := range []string{strings.Repeat("k", 256), "two words", "caf\u00e9"} {
		r := post(key, bad, `{"title":"Pricing"}`)
		if r.Status != 400 || !strings.Contains(string(r.Body), `"header"`) {
			t.Errorf("Idempotency-Key %q: want 400 naming the header, got %s", bad, r)
		}
	}
	if runs.Load() != 4 {
		t.Fatalf("a refused key must not reach the service (runs %d)", runs.Load())
	}
}
