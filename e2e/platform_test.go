package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/customerapi/platform/api/apitypes"
	"github.com/customerapi/platform/libs/testwait"
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
	testwait.For(t, 2*time.Second, "the revoked key to be refused with 401", func() (bool, string) {
		r := api(t, key).Do("GET", "/v0/topics", nil)
		return r.Status == 401, fmt.Sprintf("it answered %d", r.Status)
	})
}

func TestErrorsAndRequestIDs(t *testing.T) {
	c := api(t, newKey(t, nil))
	r := c.With("X-Request-Id", "e2e-trace-42").Do("GET", "/v0/topics/topic_doesnotexist", nil)
	m := must(t, r, 404)
	if m["requestId"] != "e2e-trace-42" || r.Header.Get("X-Request-Id") != "e2e-trace-42" || m["code"] != "NOT_FOUND" {
		t.Fatalf("404: %s", r)
	}
	must(t, c.Do("GET", "/v0/unknown", nil), 404)
	// A method the path does not have: 405 with its own code (not NOT_FOUND, which read
	// as "the resource is missing"), in the envelope, with its error page.
	if r := c.Do("PUT", "/v0/topics", map[string]any{}); r.Status != 405 || r.Map()["code"] != "METHOD_NOT_ALLOWED" ||
		!strings.HasSuffix(fmt.Sprint(r.Map()["type"]), "/errors/method_not_allowed") {
		t.Fatalf("PUT /v0/topics: want 405 METHOD_NOT_ALLOWED, got %s", r)
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
	m := decode[apitypes.ErrorEnvelope](t, r, 429)
	var d apitypes.RateLimitDetails
	if m.Details != nil {
		d, _ = m.Details.AsRateLimitDetails()
	}
	if m.Code != "RATE_LIMITED" || d.Limit != 5 || d.Remaining != 0 || d.RetryAfter != 2 {
		t.Fatalf("429: %s", r)
	}
	if reset := int64(d.ResetTime); reset < time.Now().UnixMilli() {
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
	resp, err := http.Get(sys.base + "/readyz")
	if err != nil {
		t.Fatalf("gateway readyz with a service down: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 {
		t.Fatalf("gateway readyz with a service down: %s", resp.Status)
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
	var killed bool
	var met [8]bool // the writers whose request failed since the kill
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				//nolint:contextcheck // the client's calls take no context: the loop checks ctx between them
				r, err := c.Try("POST", "/v0/topics", map[string]any{"title": fmt.Sprintf("load-%d", i)})
				mu.Lock()
				if err == nil && r.Status == 201 {
					acked = append(acked, r.Map()["topicId"].(string))
				} else if killed {
					met[w] = true
				}
				mu.Unlock()
			}
		}()
	}
	defer wg.Wait() // after cancel (deferred last: it runs first) when a wait below fails the test
	defer cancel()
	// Kill it mid-load: after 400 ms of load, once writes are being acknowledged (however
	// slow the machine).
	began := time.Now()
	testwait.For(t, 20*time.Second, "20 acknowledged writes and 400 ms of load before the kill", func() (bool, string) {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		return n >= 20 && time.Since(began) >= 400*time.Millisecond, fmt.Sprintf("%d acknowledged in %s", n, time.Since(began))
	})
	mu.Lock()
	killed = true
	mu.Unlock()
	s.Kill("topics")
	// Each writer's request in flight at the kill has been answered: every writer has had
	// one fail since.
	testwait.For(t, 20*time.Second, "every writer to meet the killed service", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, m := range met {
			if m {
				n++
			}
		}
		return n == len(met), fmt.Sprintf("%d of %d writers had a request fail", n, len(met))
	})
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
