package application_test

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/customerapi/platform/api/apitest"
	"github.com/customerapi/platform/api/apitypes"
	"github.com/customerapi/platform/services/webhooks/internal/application"
)

var secretPattern = regexp.MustCompile(`^whsec_[A-Za-z0-9+/]{43}=$`)

func TestSubscriptionLifecycle(t *testing.T) {
	s := start(t, nil, application.Options{})
	c := client(t, s, "acme")

	created := mustStatus(t, c.Do("POST", "/v0/webhook_subscriptions", map[string]any{
		"url": "https://hooks.example.com/in", "events": []string{"page.version.created", "form.submitted"}}), 201)
	id := created["subscriptionId"].(string)
	secret, _ := created["signingSecret"].(string)
	if !strings.HasPrefix(id, "whsub_") || !secretPattern.MatchString(secret) || created["active"] != true ||
		created["disabledReason"] != nil || created["disabledAt"] != nil || created["createdAt"] != created["updatedAt"] ||
		fmt.Sprint(created["events"]) != "[page.version.created form.submitted]" {
		t.Fatalf("created = %v", created)
	}
	got := mustStatus(t, c.Do("GET", "/v0/webhook_subscriptions/"+id, nil), 200)
	if _, ok := got["signingSecret"]; ok || got["url"] != "https://hooks.example.com/in" {
		t.Fatalf("got = %v", got)
	}

	time.Sleep(5 * time.Millisecond) // the clock must move: updatedAt must differ from createdAt
	patched := mustStatus(t, c.Do("PATCH", "/v0/webhook_subscriptions/"+id, map[string]any{
		"url": "https://hooks.example.com/v2", "events": nil, "active": false}), 200)
	if patched["url"] != "https://hooks.example.com/v2" || patched["events"] != nil || patched["active"] != false ||
		patched["updatedAt"] == patched["createdAt"] || patched["disabledReason"] != nil {
		t.Fatalf("patched = %v", patched)
	}
	if _, ok := patched["signingSecret"]; ok {
		t.Fatal("PATCH shows the secret")
	}
	same := mustStatus(t, c.Do("PATCH", "/v0/webhook_subscriptions/"+id, map[string]any{}), 200)
	if same["updatedAt"] != patched["updatedAt"] {
		t.Fatal("an empty patch changed updatedAt")
	}
	listed := mustStatus(t, c.Do("PATCH", "/v0/webhook_subscriptions/"+id, map[string]any{"events": []string{"form.enriched"}, "active": true}), 200)
	if fmt.Sprint(listed["events"]) != "[form.enriched]" || listed["active"] != true {
		t.Fatalf("re-listed = %v", listed)
	}

	rotated := mustStatus(t, c.Do("POST", "/v0/webhook_subscriptions/"+id+"/rotate_secret", nil), 200)
	if s2, _ := rotated["signingSecret"].(string); !secretPattern.MatchString(s2) || s2 == secret {
		t.Fatalf("rotated = %v", rotated)
	}
	mustStatus(t, c.Do("POST", "/v0/webhook_subscriptions/"+id+"/rotate_secret", map[string]any{}), 200)

	// A WebhookSubscription has no signingSecret: the strict decoding refuses one.
	list := apitest.Decode[apitypes.WebhookSubscriptionPage](t, c.Do("GET", "/v0/webhook_subscriptions", nil), 200, "the list shows no secrets")
	if list.TotalCount != 1 || len(list.Items) != 1 {
		t.Fatalf("list = %s", show(list))
	}

	mustStatus(t, c.Do("DELETE", "/v0/webhook_subscriptions/"+id, nil), 204)
	mustStatus(t, c.Do("GET", "/v0/webhook_subscriptions/"+id, nil), 404)
	mustStatus(t, c.Do("DELETE", "/v0/webhook_subscriptions/"+id, nil), 404)
	mustStatus(t, c.Do("PATCH", "/v0/webhook_subscriptions/"+id, map[string]any{"active": true}), 404)
	mustStatus(t, c.Do("POST", "/v0/webhook_subscriptions/"+id+"/rotate_secret", nil), 404)
	mustStatus(t, c.Do("GET", "/v0/webhook_subscriptions/"+id+"/deliveries", nil), 404)
}

func TestCreateDefaults(t *testing.T) {
	s := start(t, nil, application.Options{})
	c := client(t, s, "acme")
	all := mustStatus(t, c.Do("POST", "/v0/webhook_subscriptions", map[string]any{"url": "http://hooks.example.com", "events": nil}), 201)
	if all["events"] != nil || all["active"] != true {
		t.Fatalf("events null = %v", all)
	}
	off := mustStatus(t, c.Do("POST", "/v0/webhook_subscriptions", map[string]any{
		"url": "https://hooks.example.com/x?a=1", "events": []string{"form.enriched"}, "active": false}), 201)
	if off["active"] != false || off["disabledReason"] != nil {
		t.Fatalf("inactive = %v", off)
	}
}

func TestListPagination(t *testing.T) {
	s := start(t, nil, application.Options{})
	a, b := client(t, s, "acme"), client(t, s, "globex")
	var want []string
	for i := 0; i < 5; i++ {
		id, _ := subscribe(t, a, fmt.Sprintf("https://hooks.example.com/%d", i), nil)
		want = append(want, id)
	}
	var seen []string
	path := "/v0/webhook_subscriptions?limit=2"
	for {
		page := apitest.Decode[apitypes.WebhookSubscriptionPage](t, a.Do("GET", path, nil), 200, "a subscriptions page")
		if page.TotalCount != 5 {
			t.Fatalf("totalCount = %v", page.TotalCount)
		}
		for _, it := range page.Items {
			seen = append(seen, it.SubscriptionId)
		}
		if !page.HasMore {
			break
		}
		path = "/v0/webhook_subscriptions?limit=2&cursor=" + url.QueryEscape(*page.NextCursor)
	}
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Fatalf("walk %v, want %v", seen, want)
	}
	cur := mustStatus(t, a.Do("GET", "/v0/webhook_subscriptions?limit=1", nil), 200)["nextCursor"].(string)
	for name, tc := range map[string]struct {
		c    *apitest.Client
		path string
		want string
	}{
		"limit 0":             {a, "/v0/webhook_subscriptions?limit=0", "query:too_small:[limit]"},
		"limit 101":           {a, "/v0/webhook_subscriptions?limit=101", "query:too_big:[limit]"},
		"limit abc":           {a, "/v0/webhook_subscriptions?limit=abc", "query:invalid_type:[limit]"},
		"tampered cursor":     {a, "/v0/webhook_subscriptions?cursor=" + url.QueryEscape(cur[:len(cur)-2]+"xx"), "query:invalid_cursor:[cursor]"},
		"other tenant cursor": {b, "/v0/webhook_subscriptions?cursor=" + url.QueryEscape(cur), "query:invalid_cursor:[cursor]"},
		"other list cursor":   {a, "/v0/webhook_subscriptions/" + want[0] + "/deliveries?cursor=" + url.QueryEscape(cur), "query:invalid_cursor:[cursor]"},
		"bad status filter":   {a, "/v0/webhook_subscriptions/" + want[0] + "/deliveries?status=done", "query:invalid_enum_value:[status]"},
	} {
		r := tc.c.Do("GET", tc.path, nil)
		if r.Status != 400 || fmt.Sprint(issueCodes(r)) != "["+tc.want+"]" {
			t.Errorf("%s: %d %v", name, r.Status, issueCodes(r))
		}
	}
}

func TestTenantIsolation(t *testing.T) {
	s := start(t, nil, application.Options{})
	a, b := client(t, s, "acme"), client(t, s, "globex")
	id, _ := subscribe(t, a, "https://hooks.example.com/a", nil)
	base := "/v0/webhook_subscriptions/" + id
	mustStatus(t, b.Do("GET", base, nil), 404)
	mustStatus(t, b.Do("PATCH", base, map[string]any{"active": false}), 404)
	mustStatus(t, b.Do("POST", base+"/rotate_secret", nil), 404)
	mustStatus(t, b.Do("GET", base+"/deliveries", nil), 404)
	mustStatus(t, b.Do("GET", base+"/deliveries/delivery_x", nil), 404)
	mustStatus(t, b.Do("POST", base+"/deliveries/delivery_x/retry", nil), 404)
	mustStatus(t, b.Do("DELETE", base, nil), 404)
	if n := mustStatus(t, b.Do("GET", "/v0/webhook_subscriptions", nil), 200)["totalCount"]; n != 0.0 {
		t.Fatalf("globex sees %v subscriptions", n)
	}
	if mustStatus(t, a.Do("GET", base, nil), 200)["active"] != true {
		t.Fatal("another tenant changed the subscription")
	}
	anon := &apitest.Client{T: t, Base: s.URL, Contract: contract}
	mustStatus(t, anon.Do("GET", "/v0/webhook_subscriptions", nil), 401)
}

func TestBadInputIs400(t *testing.T) {
	s := start(t, nil, application.Options{})
	c := client(t, s, "acme")
	id, _ := subscribe(t, c, "https://hooks.example.com/a", nil)
	base := "/v0/webhook_subscriptions"
	long := "https://hooks.example.com/" + strings.Repeat("a", 2048)
	for name, tc := range map[string]struct {
		method, path string
		body         any
		want         string
	}{
		"create: malformed":       {"POST", base, apitest.Raw(`{"url":`), "[body:invalid_json:[]]"},
		"create: array body":      {"POST", base, apitest.Raw(`[]`), "[body:invalid_type:[]]"},
		"create: empty":           {"POST", base, map[string]any{}, "[body:invalid_type:[url] body:invalid_type:[events]]"},
		"create: missing events":  {"POST", base, map[string]any{"url": "https://x.example.com"}, "[body:invalid_type:[events]]"},
		"create: empty url":       {"POST", base, map[string]any{"url": "", "events": nil}, "[body:too_small:[url]]"},
		"create: relative url":    {"POST", base, map[string]any{"url": "/hook", "events": nil}, "[body:invalid_string:[url]]"},
		"create: ftp url":         {"POST", base, map[string]any{"url": "ftp://x.example.com/", "events": nil}, "[body:invalid_string:[url]]"},
		"create: no host":         {"POST", base, map[string]any{"url": "https://", "events": nil}, "[body:invalid_string:[url]]"},
		"create: long url":        {"POST", base, map[string]any{"url": long, "events": nil}, "[body:too_big:[url]]"},
		"create: url type":        {"POST", base, map[string]any{"url": 5, "events": nil}, "[body:invalid_type:[url]]"},
		"create: null url":        {"POST", base, map[string]any{"url": nil, "events": nil}, "[body:invalid_type:[url]]"},
		"create: empty events":    {"POST", base, map[string]any{"url": "https://x.example.com", "events": []string{}}, "[body:too_small:[events]]"},
		"create: unknown event":   {"POST", base, map[string]any{"url": "https://x.example.com", "events": []string{"page.deleted"}}, "[body:invalid_enum_value:[events 0]]"},
		"create: internal event":  {"POST", base, map[string]any{"url": "https://x.example.com", "events": []string{"topic.created"}}, "[body:invalid_enum_value:[events 0]]"},
		"create: duplicate event": {"POST", base, map[string]any{"url": "https://x.example.com", "events": []string{"form.enriched", "form.enriched"}}, "[body:custom:[events]]"},
		"create: events type":     {"POST", base, map[string]any{"url": "https://x.example.com", "events": "form.enriched"}, "[body:invalid_type:[events]]"},
		"create: event type":      {"POST", base, map[string]any{"url": "https://x.example.com", "events": []any{1}}, "[body:invalid_enum_value:[events 0]]"},
		"create: active type":     {"POST", base, map[string]any{"url": "https://x.example.com", "events": nil, "active": "yes"}, "[body:invalid_type:[active]]"},
		"create: unknown field":   {"POST", base, map[string]any{"url": "https://x.example.com", "events": nil, "secret": "mine"}, "[body:unrecognized_keys:[secret]]"},
		"update: null url":        {"PATCH", base + "/" + id, map[string]any{"url": nil}, "[body:invalid_type:[url]]"},
		"update: bad url":         {"PATCH", base + "/" + id, map[string]any{"url": "mailto:a@b.c"}, "[body:invalid_string:[url]]"},
		"update: null active":     {"PATCH", base + "/" + id, map[string]any{"active": nil}, "[body:invalid_type:[active]]"},
		"update: empty events":    {"PATCH", base + "/" + id, map[string]any{"events": []string{}}, "[body:too_small:[events]]"},
		"update: unknown field":   {"PATCH", base + "/" + id, map[string]any{"subscriptionId": "x"}, "[body:unrecognized_keys:[subscriptionId]]"},
		"update: malformed":       {"PATCH", base + "/" + id, apitest.Raw(`{`), "[body:invalid_json:[]]"},
		"update: no body":         {"PATCH", base + "/" + id, nil, "[body:invalid_type:[]]"},
		"update: white space":     {"PATCH", base + "/" + id, apitest.Raw(" \n\t "), "[body:invalid_json:[]]"},
		"update: array body":      {"PATCH", base + "/" + id, apitest.Raw(`[]`), "[body:invalid_type:[]]"},
		"rotate: a field":         {"POST", base + "/" + id + "/rotate_secret", map[string]any{"secret": "x"}, "[body:unrecognized_keys:[secret]]"},
		"rotate: white space":     {"POST", base + "/" + id + "/rotate_secret", apitest.Raw("  "), "[body:invalid_json:[]]"},
		"retry: a field":          {"POST", base + "/" + id + "/deliveries/delivery_x/retry", map[string]any{"now": true}, "[body:unrecognized_keys:[now]]"},
		"retry: white space":      {"POST", base + "/" + id + "/deliveries/delivery_x/retry", apitest.Raw("\r\n"), "[body:invalid_json:[]]"},
	} {
		r := c.Do(tc.method, tc.path, tc.body)
		if r.Status != 400 || fmt.Sprint(issueCodes(r)) != tc.want {
			t.Errorf("%s: %d %v, want %s", name, r.Status, issueCodes(r), tc.want)
		}
	}
	if r := c.Do("POST", base, apitest.Raw(`{"url":"`+strings.Repeat("a", 1<<20)+`"}`)); r.Status != 400 {
		t.Errorf("oversized body: %d", r.Status)
	}
	if r := c.With("Content-Type", "text/plain").Do("POST", base, apitest.Raw(`{"url":"https://x.example.com","events":null}`)); r.Status != 400 {
		t.Errorf("text/plain body: %d", r.Status)
	}
	if r := c.Do("PUT", base+"/"+id, map[string]any{"active": true}); r.Status != 405 {
		t.Errorf("PUT: %d", r.Status)
	}
	// Nothing half-written: the failed creates left only the first subscription.
	if n := mustStatus(t, c.Do("GET", base, nil), 200)["totalCount"]; n != 1.0 {
		t.Fatalf("%v subscriptions after bad requests", n)
	}
}

// With private targets not allowed, URLs of loopback, private, link-local and metadata
// addresses, and of names resolving to them, are refused when a subscription is written.
func TestSSRFGuardRefusesPrivateTargetsAtSubscription(t *testing.T) {
	names := newResolver(map[string]string{
		"hooks.example.com":    "93.184.216.34",
		"loopback.example.com": "127.0.0.1",
		"internal.example.com": "10.1.2.3",
		"metadata.example.com": "169.254.169.254",
	})
	s := start(t, map[string]string{"WEBHOOK_ALLOW_PRIVATE_TARGETS": "false"}, application.Options{Resolver: names})
	c := client(t, s, "acme")
	for _, u := range []string{
		"http://127.0.0.1:9000/hook", "http://[::1]/hook", "http://10.0.0.1/hook", "https://10.255.1.2/",
		"http://169.254.169.254/latest/meta-data/", "http://192.168.0.10/", "http://172.16.0.1/",
		"https://loopback.example.com/hook", "https://internal.example.com/hook", "https://metadata.example.com/hook",
	} {
		r := c.Do("POST", "/v0/webhook_subscriptions", map[string]any{"url": u, "events": nil})
		if r.Status != 400 || fmt.Sprint(issueCodes(r)) != "[body:custom:[url]]" || !strings.Contains(string(r.Body), "refused") {
			t.Errorf("%s: %s", u, r)
		}
		// The answer says the destination is not allowed, never what a name resolves to.
		said := fmt.Sprint(r.Map()["detail"], r.Map()["details"])
		for _, internal := range []string{"127.0.0.1", "10.1.2.3", "169.254.169.254"} {
			if !strings.Contains(u, internal) && strings.Contains(said, internal) {
				t.Errorf("%s: the refusal names the address %s it resolves to: %s", u, internal, said)
			}
		}
	}
	id, _ := subscribe(t, c, "https://hooks.example.com/in", nil)
	// An unresolvable name is accepted: deliveries check again when they connect.
	subscribe(t, c, "https://not-yet.example.com/in", nil)
	r := c.Do("PATCH", "/v0/webhook_subscriptions/"+id, map[string]any{"url": "https://internal.example.com/in"})
	if r.Status != 400 || fmt.Sprint(issueCodes(r)) != "[body:custom:[url]]" {
		t.Fatalf("patch to a private target: %s", r)
	}
	if got := mustStatus(t, c.Do("GET", "/v0/webhook_subscriptions/"+id, nil), 200)["url"]; got != "https://hooks.example.com/in" {
		t.Fatalf("url = %v after a refused patch", got)
	}
}

// A tenant has at most 100 subscriptions, also when creates race.
func TestSubscriptionLimitPerTenant(t *testing.T) {
	s := start(t, nil, application.Options{})
	c, other := client(t, s, "acme"), client(t, s, "globex")
	for i := 0; i < 90; i++ {
		subscribe(t, c, fmt.Sprintf("https://hooks.example.com/%d", i), nil)
	}
	var wg sync.WaitGroup
	var created, refused atomic.Int32
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := c.Do("POST", "/v0/webhook_subscriptions", map[string]any{"url": "https://hooks.example.com/race", "events": nil})
			switch {
			case r.Status == 201:
				created.Add(1)
			case r.Status == 409 && r.Map()["code"] == "CONFLICT":
				refused.Add(1)
			default:
				t.Errorf("create: %s", r)
			}
		}()
	}
	wg.Wait()
	if created.Load() != 10 || refused.Load() != 10 {
		t.Fatalf("%d created, %d refused", created.Load(), refused.Load())
	}
	if n := mustStatus(t, c.Do("GET", "/v0/webhook_subscriptions?limit=1", nil), 200)["totalCount"]; n != 100.0 {
		t.Fatalf("%v subscriptions", n)
	}
	// The limit is per tenant.
	subscribe(t, other, "https://hooks.example.com/other", nil)
}

// URLs that parse but are not URIs, have impossible ports or malformed hosts are a 400.
func TestURLRules(t *testing.T) {
	s := start(t, nil, application.Options{})
	c := client(t, s, "acme")
	id, _ := subscribe(t, c, "https://hooks.example.com/in", nil)
	for _, u := range []string{"https://hooks.example.com/a b", "https://hooks.example.com/ü", "http://hooks.example.com:99999/",
		"http://0x7f.1/", "https://hooks..example.com/", "http://-/"} {
		for _, r := range []*apitest.Response{
			c.Do("POST", "/v0/webhook_subscriptions", map[string]any{"url": u, "events": nil}),
			c.Do("PATCH", "/v0/webhook_subscriptions/"+id, map[string]any{"url": u}),
		} {
			if r.Status != 400 || fmt.Sprint(issueCodes(r)) != "[body:invalid_string:[url]]" {
				t.Errorf("%s: %s", u, r)
			}
		}
	}
	for _, u := range []string{"https://hooks.example.com/a%20b?q=1#f", "https://user:pw@hooks.example.com:8443/x", "https://93.184.216.34/in"} {
		mustStatus(t, c.Do("POST", "/v0/webhook_subscriptions", map[string]any{"url": u, "events": nil}), 201)
	}
}
