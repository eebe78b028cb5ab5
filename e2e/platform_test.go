package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestAuthenticationRules(t *testing.T) {
	key := newKey(t, nil)
	multi := newKey(t, map[string]any{"tenantIds": []string{"tenant-a", "tenant-b"}})
	for name, tc := range map[string]struct {
		key    string
		status int
		code   string
	}{
		"no key":           {"", 401, "UNAUTHORIZED"},
		"unknown key":      {"capi_" + strings.Repeat("Z", 40), 401, "UNAUTHORIZED"},
		"garbage key":      {"let me in", 401, "UNAUTHORIZED"},
		"multi-tenant key": {multi, 403, "FORBIDDEN"},
		"good key":         {key, 200, ""},
	} {
		r := api(t, tc.key).Do("GET", "/v0/topics", nil)
		if r.Status != tc.status || (tc.code != "" && r.Map()["code"] != tc.code) {
			t.Errorf("%s: %s", name, r)
		}
	}
	// Unauthenticated requests learn nothing about routes.
	if r := api(t, "").Do("GET", "/v0/no-such-thing", nil); r.Status != 401 {
		t.Errorf("unknown route without key: %d", r.Status)
	}
}

func TestRevokedKeyStopsWorkingWithin2s(t *testing.T) {
	r := admin(t).Do("POST", "/admin/v0/keys", map[string]any{"tenantIds": []string{"revoke-me"}})
	if r.Status != 201 {
		t.Fatal(r)
	}
	id, key := r.Map()["keyId"].(string), r.Map()["key"].(string)
	must(t, api(t, key).Do("GET", "/v0/topics", nil), 200)
	must(t, admin(t).Do("DELETE", "/admin/v0/keys/"+id, nil), 204)
	deadline := time.Now().Add(2 * time.Second)
	for {
		r := api(t, key).Do("GET", "/v0/topics", nil)
		if r.Status == 401 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("revoked key still answered %d after 2 s", r.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestErrorsAndRequestIDs(t *testing.T) {
	c := api(t, newKey(t, nil))
	r := c.With("X-Request-Id", "e2e-trace-42").Do("GET", "/v0/topics/topic_doesnotexist", nil)
	m := must(t, r, 404)
	if m["requestId"] != "e2e-trace-42" || r.Header.Get("X-Request-Id") != "e2e-trace-42" || m["code"] != "NOT_FOUND" {
		t.Fatalf("404: %s", r)
	}
	must(t, c.Do("GET", "/v0/unknown", nil), 404)
	if r := c.Do("PUT", "/v0/topics", map[string]any{}); r.Status != 405 {
		t.Fatalf("PUT /v0/topics: %s", r)
	}
	if r := c.Do("POST", "/v0/topics", nil); r.Status != 400 {
		t.Fatalf("POST without body: %s", r)
	}
	big := `{"title":"` + strings.Repeat("x", 1<<20) + `"}`
	if r := c.Do("POST", "/v0/topics", rawBody(big)); r.Status != 400 || r.Map()["code"] != "VALIDATION_ERROR" {
		t.Fatalf("1 MiB body: %d", r.Status)
	}
	if r := api(t, "").Do("GET", "/v0/openapi.json", nil); r.Status != 200 {
		t.Fatalf("openapi.json: %d", r.Status)
	}
}

func TestRateLimit(t *testing.T) {
	c := api(t, newKey(t, map[string]any{"rateLimit": map[string]any{"limit": 5, "windowMs": 10000}}))
	for i := 0; i < 5; i++ {
		r := must(t, c.Do("GET", "/v0/topics", nil), 200)
		_ = r
	}
	r := c.Do("GET", "/v0/topics", nil)
	m := must(t, r, 429)
	d := m["details"].(map[string]any)
	if m["code"] != "RATE_LIMITED" || d["limit"] != 5.0 || d["remaining"] != 0.0 || d["retryAfter"] != 2.0 {
		t.Fatalf("429: %s", r)
	}
	if reset := int64(d["resetTime"].(float64)); reset < time.Now().UnixMilli() {
		t.Fatalf("resetTime %d is in the past", reset)
	}
	if r.Header.Get("Retry-After") != "2" {
		t.Fatalf("Retry-After = %q", r.Header.Get("Retry-After"))
	}
}

func TestProxiedResponsesCarryRateLimitHeaders(t *testing.T) {
	r := must2(t, api(t, newKey(t, nil)).Do("GET", "/v0/topics", nil), 200)
	for _, h := range []string{"RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "RateLimit-Policy", "RateLimit", "X-Request-Id"} {
		if r.Header.Get(h) == "" {
			t.Errorf("missing %s", h)
		}
	}
}

// A stopped service makes the gateway answer 503 quickly; once it is back, requests
// succeed again.
func TestServiceDownGives503ThenRecovers(t *testing.T) {
	s := local(t)
	c := api(t, newKey(t, nil))
	must(t, c.Do("GET", "/v0/topics", nil), 200)
	s.Kill("topics")
	start := time.Now()
	r := c.Do("GET", "/v0/topics", nil)
	if r.Status != 503 || r.Map()["code"] != "SERVICE_UNAVAILABLE" || time.Since(start) > 2*time.Second {
		t.Fatalf("with topics stopped: %s after %s", r, time.Since(start))
	}
	if resp, err := http.Get(sys.base + "/readyz"); err != nil || resp.StatusCode != 503 {
		t.Fatalf("gateway readyz with a service down: %v %v", resp, err)
	}
	if err := s.Restart(context.Background(), "topics"); err != nil {
		t.Fatal(err)
	}
	must(t, c.Do("GET", "/v0/topics", nil), 200)
}

// A service killed with SIGKILL under load loses no acknowledged write.
func TestKilledServiceLosesNoAcknowledgedWrite(t *testing.T) {
	s := local(t)
	c := api(t, newKey(t, map[string]any{"rateLimit": map[string]any{"limit": 100000, "windowMs": 1000}}))
	var mu sync.Mutex
	var acked []string
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				r, err := c.Try("POST", "/v0/topics", map[string]any{"title": fmt.Sprintf("load-%d", i)})
				if err == nil && r.Status == 201 {
					mu.Lock()
					acked = append(acked, r.Map()["topicId"].(string))
					mu.Unlock()
				}
			}
		}()
	}
	// Kill it mid-load: after 400 ms of load, once writes are being acknowledged (however
	// slow the machine).
	began := time.Now()
	for deadline := began.Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 20 && time.Since(began) >= 400*time.Millisecond {
			break
		}
		if time.Now().After(deadline) {
			cancel()
			wg.Wait()
			t.Fatalf("only %d writes acknowledged in 20 s before the kill", n)
		}
	}
	s.Kill("topics")
	time.Sleep(200 * time.Millisecond)
	cancel()
	wg.Wait()
	if err := s.Restart(context.Background(), "topics"); err != nil {
		t.Fatal(err)
	}
	for _, id := range acked {
		must(t, c.Do("GET", "/v0/topics/"+id, nil), 200)
	}
	t.Logf("%d acknowledged writes all survived SIGKILL", len(acked))
}
