package e2e

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/customerapi/platform/api/apitest"
)

// A POST with an Idempotency-Key, against the whole system: five sent at once create one
// topic, and each answer is that one 201 byte for byte or a 409 "in flight"; a later retry
// is the stored answer marked Idempotent-Replayed, also after the gateway restarted; the
// key with another body is a 409.
func TestIdempotentPOST(t *testing.T) {
	c := api(t, newKey(t, nil))
	keyed := c.With("Idempotency-Key", "e2e-"+time.Now().Format("150405.000000000"))
	body := map[string]any{"title": "Idempotent"}
	answers := make([]*apitest.Response, 5)
	var wg sync.WaitGroup
	for i := range answers {
		wg.Add(1)
		go func() { defer wg.Done(); answers[i] = keyed.Do("POST", "/v0/topics", body) }()
	}
	wg.Wait()
	var first *apitest.Response
	for _, r := range answers {
		switch {
		case r.Status == 201 && (first == nil || string(first.Body) == string(r.Body)):
			first = r
		case r.Status == 409:
		default:
			t.Fatalf("one of five POSTs with one key: %s (first 201: %v)", r, first)
		}
	}
	if first == nil {
		t.Fatal("no POST of five was answered 201")
	}
	var page struct{ Items []map[string]any }
	if err := must2(t, c.Do("GET", "/v0/topics", nil), 200).JSON(&page); err != nil || len(page.Items) != 1 {
		t.Fatalf("five POSTs with one key made %d topics (%v)", len(page.Items), err)
	}
	replayed := func(when string) {
		t.Helper()
		r := keyed.Do("POST", "/v0/topics", body)
		if r.Status != 201 || string(r.Body) != string(first.Body) || r.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("a retry %s: want the stored 201, replayed; got %s (Idempotent-Replayed %q)", when, r, r.Header.Get("Idempotent-Replayed"))
		}
	}
	replayed("later")
	if r := keyed.Do("POST", "/v0/topics", map[string]any{"title": "Another"}); r.Status != 409 {
		t.Fatalf("the key with another body: want 409, got %s", r)
	}
	if sys.stack != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if err := sys.stack.Restart(ctx, "gateway"); err != nil {
			t.Fatal(err)
		}
		replayed("after the gateway restarted")
	}
}
