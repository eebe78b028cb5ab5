package application

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/customerapi/platform/api/apitest"
	"github.com/customerapi/platform/gateway/internal/proxy"
	"github.com/customerapi/platform/gateway/internal/ratelimit"
	"github.com/customerapi/platform/libs/config"
	"github.com/customerapi/platform/libs/internalauth"
	"github.com/customerapi/platform/libs/postgres/pgtest"
	"github.com/customerapi/platform/libs/telemetry"
	"github.com/customerapi/platform/libs/testwait"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

const adminToken = "test-admin-token-0123456789"

// internalSecret is the INTERNAL_AUTH_SECRET of the gateways under test.
var internalSecret = []byte(strings.Repeat("s", 32))

// checkSigned fails unless the headers a fake upstream received carry the gateway's valid
// signature over the tenant, key ID and request ID they carry.
func checkSigned(t *testing.T, h map[string]string) {
	t.Helper()
	s, err := internalauth.New(internalSecret)
	if err != nil {
		t.Fatal(err)
	}
	claims := internalauth.Claims{TenantID: h[internalauth.TenantHeader], KeyID: h[internalauth.KeyHeader],
		RequestID: h["X-Request-Id"]}
	if err := s.Verify(h[internalauth.SignatureHeader], claims, time.Now()); err != nil {
		t.Errorf("the gateway did not sign what it forwarded (%+v, %q): %v", claims, h[internalauth.SignatureHeader], err)
	}
}

// echo is a fake upstream that answers with what it received.
func echo(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" {
			w.WriteHeader(200)
			return
		}
		if r.URL.Path == "/v0/topics/slow" {
			time.Sleep(3 * time.Second) // the slow upstream under test: it answers after the gateway's timeout
		}
		hdr := map[string]string{}
		for k := range r.Header {
			hdr[k] = r.Header.Get(k)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Request-Id", r.Header.Get("X-Request-Id"))
		_ = json.NewEncoder(w).Encode(map[string]any{"path": r.URL.RequestURI(), "method": r.Method, "headers": hdr})
	}))
	t.Cleanup(srv.Close)
	return srv
}

type gw struct {
	app    *Application
	public string
	admin  string
}

func start(t *testing.T, dbURL string, upstreams map[string]string, mutate ...func(*Config)) *gw {
	t.Helper()
	return startWith(t, observed{}, dbURL, upstreams, mutate...)
}

// observed are where a gateway under test sends its logs and spans (nil: nowhere).
type observed struct {
	log     *slog.Logger
	tracing *telemetry.Tracing
}

// startWith is start with the gateway's logs and spans going where o says.
func startWith(t *testing.T, o observed, dbURL string, upstreams map[string]string, mutate ...func(*Config)) *gw {
	t.Helper()
	pub, adm := pgtest.Listen(t), pgtest.Listen(t)
	cfg := Config{
		HTTPAddr: pub.Addr().String(), AdminAddr: adm.Addr().String(), HTTPListener: pub, AdminListener: adm,
		DatabaseURL: dbURL, AdminToken: adminToken, KeyPepper: []byte(strings.Repeat("p", 32)),
		PublicBaseURL: "http://127.0.0.1:25001",
		DefaultLimit:  ratelimit.Policy{Limit: 1000, Window: time.Second},
		Upstreams:     upstreams,
		Proxy:         proxy.Options{Timeout: time.Second, DialTimeout: 500 * time.Millisecond, MaxConns: 64},
		KeyRefresh:    time.Second, LogLevel: "error", ShutdownTimeout: 2 * time.Second, UsageFlushEvery: 100 * time.Millisecond,
		CursorSecret: []byte(strings.Repeat("c", 32)), InternalAuthSecret: internalSecret,
	}
	for _, m := range mutate {
		m(&cfg)
	}
	log, tracing := o.log, o.tracing
	if log == nil {
		log = slog.New(slog.NewJSONHandler(io.Discard, nil))
	}
	if tracing == nil {
		tracing, _ = telemetry.SetupTracing(context.Background(), "gateway-test")
	}
	a, err := New(context.Background(), cfg, log, tracing)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the gateway stopped with %v, want a clean stop", err)
		}
		a.Close()
	})
	g := &gw{app: a, public: "http://" + cfg.HTTPAddr, admin: "http://" + cfg.AdminAddr}
	waitUp(t, g.public+"/healthz")
	waitUp(t, g.admin+"/healthz")
	return g
}

func waitUp(t *testing.T, url string) {
	t.Helper()
	testwait.For(t, 10*time.Second, url+" to answer", func() (bool, string) {
		resp, err := http.Get(url)
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return true, ""
	})
}

var contract = apitest.MustLoad()

func (g *gw) adminClient(t *testing.T) *apitest.Client {
	return (&apitest.Client{T: t, Base: g.admin}).With("Authorization", "Bearer "+adminToken)
}

func (g *gw) client(t *testing.T, key string) *apitest.Client {
	c := &apitest.Client{T: t, Base: g.public, Contract: contract}
	if key != "" {
		c = c.With("x-api-key", key)
	}
	return c
}

func (g *gw) newKey(t *testing.T, body map[string]any) (id, key string) {
	t.Helper()
	resp := g.adminClient(t).Do("POST", "/admin/v0/keys", body)
	if resp.Status != 201 {
		t.Fatalf("create key: %s", resp)
	}
	m := resp.Map()
	return m["keyId"].(string), m["key"].(string)
}

func code(t *testing.T, r *apitest.Response) string {
	t.Helper()
	c, _ := r.Map()["code"].(string)
	return c
}

// Every 401 reads "authentication is required" (the spec's detail), and says why in
// details.reason, with a hint, without telling which keys exist: an unknown key and a
// revoked one read the same.
func TestAuthentication(t *testing.T) {
	up := echo(t)
	g := start(t, pgtest.NewDatabase(t), map[string]string{"topics": up.URL})
	_, key := g.newKey(t, map[string]any{"tenantIds": []string{"acme"}})
	_, multi := g.newKey(t, map[string]any{"tenantIds": []string{"acme", "globex"}})
	revokedID, revoked := g.newKey(t, map[string]any{"tenantIds": []string{"acme"}})
	if r := g.adminClient(t).Do("DELETE", "/admin/v0/keys/"+revokedID, nil); r.Status != 204 {
		t.Fatalf("revoke: %s", r)
	}

	for name, tc := range map[string]struct {
		key    string
		header [2]string // another header the request carries
		query  string
		status int
		code   string
		reason string
	}{
		"missing key":   {status: 401, code: "UNAUTHORIZED", reason: "missing_key"},
		"unknown key":   {key: "capi_" + strings.Repeat("x", 40), status: 401, code: "UNAUTHORIZED", reason: "unknown_key"},
		"revoked key":   {key: revoked, status: 401, code: "UNAUTHORIZED", reason: "unknown_key"},
		"malformed key": {key: "hello", status: 401, code: "UNAUTHORIZED", reason: "malformed_key"},
		"key in quotes": {key: `"` + key + `"`, status: 401, code: "UNAUTHORIZED", reason: "malformed_key"},
		"key as Authorization: Bearer": {header: [2]string{"Authorization", "Bearer " + key}, status: 401, code: "UNAUTHORIZED",
			reason: "wrong_header"},
		"key as Authorization alone": {header: [2]string{"Authorization", key}, status: 401, code: "UNAUTHORIZED", reason: "wrong_header"},
		"key in the query":           {query: "?api_key=" + key, status: 401, code: "UNAUTHORIZED", reason: "wrong_header"},
		"a key's value in the query": {query: "?k=" + key, status: 401, code: "UNAUTHORIZED", reason: "wrong_header"},
		"an unrelated query":         {query: "?limit=5", status: 401, code: "UNAUTHORIZED", reason: "missing_key"},
		"Bearer beside a valid key":  {key: key, header: [2]string{"Authorization", "Bearer x"}, status: 200},
		"multi-tenant key":           {key: multi, status: 403, code: "FORBIDDEN"},
		"single-tenant key":          {key: key, status: 200},
	} {
		t.Run(name, func(t *testing.T) {
			c := g.client(t, tc.key)
			if tc.header[0] != "" {
				c = c.With(tc.header[0], tc.header[1])
			}
			if tc.status == 200 {
				c.Contract = nil // the echo upstream is not the real topics service
			}
			resp := c.Do("GET", "/v0/topics"+tc.query, nil)
			if resp.Status != tc.status || code(t, resp) != tc.code {
				t.Fatalf("got %s", resp)
			}
			if tc.status != 401 {
				return
			}
			m := resp.Map()
			details := apitest.ErrorDetails(resp)
			if m["detail"] != "authentication is required" {
				t.Errorf("detail = %v, want the spec's \"authentication is required\"", m["detail"])
			}
			if details["reason"] != tc.reason {
				t.Errorf("details.reason = %v, want %s", details["reason"], tc.reason)
			}
			if hint, _ := details["hint"].(string); hint == "" || strings.Contains(hint, key) {
				t.Errorf("details.hint = %q: want a hint that repeats no key", hint)
			}
		})
	}
}

func TestForwarding(t *testing.T) {
	up := echo(t)
	g := start(t, pgtest.NewDatabase(t), map[string]string{"topics": up.URL})
	keyID, key := g.newKey(t, map[string]any{"tenantIds": []string{"acme"}})
	c := g.client(t, key).With("X-Internal-Tenant-Id", "evil").With("X-Internal-Anything", "x").
		With("X-Internal-Signature", "v1,t=0,forged").With("X-Request-Id", "client-req-1")
	c.Contract = nil // the echo upstream is not the real topics service
	resp := c.Do("GET", "/v0/topics?limit=5", nil)
	if resp.Status != 200 {
		t.Fatalf("got %s", resp)
	}
	var got struct {
		Path    string            `json:"path"`
		Headers map[string]string `json:"headers"`
	}
	_ = resp.JSON(&got)
	h := got.Headers
	switch {
	case got.Path != "/v0/topics?limit=5":
		t.Errorf("path = %q", got.Path)
	case h["X-Internal-Tenant-Id"] != "acme":
		t.Errorf("tenant header = %q, want acme (client-sent value must be dropped)", h["X-Internal-Tenant-Id"])
	case h["X-Internal-Key-Id"] != keyID:
		t.Errorf("key ID header = %q", h["X-Internal-Key-Id"])
	case h["X-Internal-Anything"] != "":
		t.Errorf("client-sent internal header forwarded")
	case h["X-Api-Key"] != "":
		t.Errorf("API key forwarded to the service")
	case h["X-Request-Id"] != "client-req-1" || resp.Header.Get("X-Request-Id") != "client-req-1":
		t.Errorf("request ID not carried: %q / %q", h["X-Request-Id"], resp.Header.Get("X-Request-Id"))
	case !strings.HasPrefix(h["Traceparent"], "00-"):
		t.Errorf("traceparent = %q", h["Traceparent"])
	}
	checkSigned(t, h) // and the client's forged signature was dropped
	for _, name := range []string{"RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "RateLimit-Policy", "RateLimit"} {
		if resp.Header.Get(name) == "" {
			t.Errorf("proxied response lacks %s", name)
		}
	}
}

func TestRoutingAndUpstreamFailures(t *testing.T) {
	up := echo(t)
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	g := start(t, pgtest.NewDatabase(t), map[string]string{"topics": up.URL, "pages": deadURL})
	_, key := g.newKey(t, map[string]any{"tenantIds": []string{"acme"}})
	c := g.client(t, key)

	if r := c.Do("GET", "/v0/nothing-here", nil); r.Status != 404 || code(t, r) != "NOT_FOUND" {
		t.Fatalf("unknown route: %s", r)
	}
	if r := c.Do("GET", "/v0/topicsX", nil); r.Status != 404 {
		t.Fatalf("prefix must end at a segment: %s", r)
	}
	start := time.Now()
	r := c.Do("GET", "/v0/pages", nil)
	if r.Status != 503 || code(t, r) != "SERVICE_UNAVAILABLE" || time.Since(start) > 2*time.Second {
		t.Fatalf("dead upstream: %s after %s", r, time.Since(start))
	}
	if r := c.Do("GET", "/v0/persons", nil); r.Status != 503 {
		t.Fatalf("unconfigured service: %s", r)
	}
	start = time.Now()
	r = c.Do("GET", "/v0/topics/slow", nil)
	if r.Status != 503 || time.Since(start) > 2500*time.Millisecond {
		t.Fatalf("slow upstream: %s after %s", r, time.Since(start))
	}
	// Aggregated readiness reports the dead upstream.
	resp, err := http.Get(g.public + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || !strings.Contains(string(body), "pages") {
		t.Fatalf("readyz = %d %s", resp.StatusCode, body)
	}
	// The pods' readiness probe leaves the upstreams out: the gateway still serves.
	resp, err = http.Get(g.public + "/readyz/local")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("readyz/local = %d with one upstream down", resp.StatusCode)
	}
}

// A service that closes its idle keep-alive connections (a restart, a replica shutting
// down) costs no request a 503: the gateway retries once on a new connection, and the
// service sees each request once.
func TestUpstreamClosingIdleConnectionsIsRetried(t *testing.T) {
	var posts atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "POST" {
			posts.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(201)
		_, _ = w.Write([]byte(`{}`))
	}))
	t.Cleanup(up.Close)
	g := start(t, pgtest.NewDatabase(t), map[string]string{"topics": up.URL})
	_, key := g.newKey(t, map[string]any{"tenantIds": []string{"acme"}})
	c := g.client(t, key)
	c.Contract = nil // the upstream is not the real topics service
	for i := 1; i <= 5; i++ {
		if r := c.Do("POST", "/v0/topics", map[string]any{"title": "t"}); r.Status != 201 {
			t.Fatalf("POST %d after the upstream closed its connections: %s", i, r)
		}
		up.CloseClientConnections() // every pooled connection is now stale (it returns once they are closed)
	}
	if n := posts.Load(); n != 5 {
		t.Fatalf("the upstream saw %d POSTs, want 5", n)
	}
}

func TestReadyWhenEveryUpstreamIsReady(t *testing.T) {
	up := echo(t)
	g := start(t, pgtest.NewDatabase(t), map[string]string{"topics": up.URL})
	resp, err := http.Get(g.public + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("readyz = %d", resp.StatusCode)
	}
}

func TestRateLimit(t *testing.T) {
	up := echo(t)
	g := start(t, pgtest.NewDatabase(t), map[string]string{"topics": up.URL})
	_, key := g.newKey(t, map[string]any{"tenantIds": []string{"acme"}, "rateLimit": map[string]any{"limit": 5, "windowMs": 10000}})
	c := g.client(t, key)
	c.Contract = nil
	for i := 0; i < 5; i++ {
		r := c.Do("GET", "/v0/topics", nil)
		if r.Status != 200 {
			t.Fatalf("request %d: %s", i+1, r)
		}
		if got, want := r.Header.Get("RateLimit-Remaining"), fmt.Sprint(4-i); got != want {
			t.Fatalf("request %d: remaining %s, want %s", i+1, got, want)
		}
		if r.Header.Get("RateLimit-Limit") != "5" || r.Header.Get("RateLimit-Policy") != `"default";q=5;w=10` {
			t.Fatalf("headers %v", r.Header)
		}
	}
	r := g.client(t, key).Do("GET", "/v0/topics", nil)
	if r.Status != 429 || code(t, r) != "RATE_LIMITED" {
		t.Fatalf("6th request: %s", r)
	}
	var env struct {
		Details struct {
			Limit      int   `json:"limit"`
			Remaining  int   `json:"remaining"`
			ResetTime  int64 `json:"resetTime"`
			RetryAfter int   `json:"retryAfter"`
		} `json:"details"`
	}
	_ = r.JSON(&env)
	d := env.Details
	now := time.Now().UnixMilli()
	if d.Limit != 5 || d.Remaining != 0 || d.RetryAfter != 2 || d.ResetTime < now || d.ResetTime > now+3000 {
		t.Fatalf("details = %+v", d)
	}
	if r.Header.Get("Retry-After") != "2" || r.Header.Get("RateLimit-Remaining") != "0" {
		t.Fatalf("429 headers %v", r.Header)
	}
	// The default limit applies to keys without their own.
	_, other := g.newKey(t, map[string]any{"tenantIds": []string{"acme"}})
	if r := c.With("x-api-key", other).Do("GET", "/v0/topics", nil); r.Header.Get("RateLimit-Limit") != "1000" {
		t.Fatalf("default limit header = %q", r.Header.Get("RateLimit-Limit"))
	}
}

// Two replicas share one database: a key revoked through one stops working on the
// other within 2 seconds, and a key created on one works on the other.
func TestRevocationReachesOtherReplicas(t *testing.T) {
	up := echo(t)
	db := pgtest.NewDatabase(t)
	a := start(t, db, map[string]string{"topics": up.URL})
	b := start(t, db, map[string]string{"topics": up.URL})
	keyID, key := a.newKey(t, map[string]any{"tenantIds": []string{"acme"}})
	waitStatus(t, b.client(t, key), 200, 2*time.Second)
	if r := a.adminClient(t).Do("DELETE", "/admin/v0/keys/"+keyID, nil); r.Status != 204 {
		t.Fatalf("revoke: %s", r)
	}
	if r := a.client(t, key).Do("GET", "/v0/topics", nil); r.Status != 401 {
		t.Fatalf("revoking replica still accepts the key: %s", r)
	}
	waitStatus(t, b.client(t, key), 401, 2*time.Second)
}

func waitStatus(t *testing.T, c *apitest.Client, status int, within time.Duration) {
	t.Helper()
	c.Contract = nil
	testwait.For(t, within, fmt.Sprintf("GET /v0/topics to answer %d", status), func() (bool, string) {
		r := c.Do("GET", "/v0/topics", nil)
		return r.Status == status, r.String()
	})
}

func TestAdminAPI(t *testing.T) {
	g := start(t, pgtest.NewDatabase(t), nil)
	anon := &apitest.Client{T: t, Base: g.admin}
	if r := anon.Do("GET", "/admin/v0/keys", nil); r.Status != 401 || code(t, r) != "UNAUTHORIZED" {
		t.Fatalf("no token: %s", r)
	}
	if r := anon.With("Authorization", "Bearer wrong").Do("GET", "/admin/v0/keys", nil); r.Status != 401 {
		t.Fatalf("wrong token: %s", r)
	}
	c := g.adminClient(t)
	for name, body := range map[string]any{
		"no tenants":     map[string]any{"tenantIds": []string{}},
		"bad tenant":     map[string]any{"tenantIds": []string{"has space"}},
		"zero limit":     map[string]any{"tenantIds": []string{"a"}, "rateLimit": map[string]any{"limit": 0, "windowMs": 1000}},
		"unknown field":  map[string]any{"tenantIds": []string{"a"}, "admin": true},
		"missing window": map[string]any{"tenantIds": []string{"a"}, "rateLimit": map[string]any{"limit": 5}},
		"malformed":      apitest.Raw(`{"tenantIds":`),
	} {
		if r := c.Do("POST", "/admin/v0/keys", body); r.Status != 400 || code(t, r) != "VALIDATION_ERROR" {
			t.Errorf("%s: %s", name, r)
		}
	}
	id, key := g.newKey(t, map[string]any{"tenantIds": []string{"acme"}, "name": "ci", "rateLimit": map[string]any{"limit": 10, "windowMs": 1000}})
	if !strings.HasPrefix(key, "capi_") || len(key) != 45 {
		t.Fatalf("key = %q", key)
	}
	r := c.Do("GET", "/admin/v0/keys/"+id, nil)
	m := r.Map()
	if r.Status != 200 || m["key"] != nil || m["prefix"] != key[:11] || m["revokedAt"] != nil {
		t.Fatalf("get key: %s", r)
	}
	if strings.Contains(string(r.Body), key) {
		t.Fatal("plaintext key shown after creation")
	}
	if m["warnings"] != nil {
		t.Errorf("a single-tenant key carries warnings: %s", r)
	}
	// A key of several tenants is refused with 403 on every request: the answer that
	// issues it says so, and so does every read of it.
	multi := c.Do("POST", "/admin/v0/keys", map[string]any{"tenantIds": []string{"acme", "globex"}})
	if w, _ := multi.Map()["warnings"].([]any); multi.Status != 201 || len(w) != 1 || !strings.Contains(fmt.Sprint(w[0]), "403") {
		t.Fatalf("a multi-tenant key is issued without a warning that it cannot be used: %s", multi)
	}
	if r := c.Do("GET", "/admin/v0/keys/"+multi.Map()["keyId"].(string), nil); r.Map()["warnings"] == nil {
		t.Errorf("reading a multi-tenant key shows no warning: %s", r)
	}
	if r := c.Do("GET", "/admin/v0/keys?limit=1", nil); r.Status != 200 || len(r.Map()["items"].([]any)) != 1 {
		t.Fatalf("list: %s", r)
	}
	if r := c.Do("DELETE", "/admin/v0/keys/key_nope", nil); r.Status != 404 {
		t.Fatalf("revoke unknown: %s", r)
	}
	if r := c.Do("DELETE", "/admin/v0/keys/"+id, nil); r.Status != 204 {
		t.Fatalf("revoke: %s", r)
	}
	if r := c.Do("DELETE", "/admin/v0/keys/"+id, nil); r.Status != 204 {
		t.Fatalf("revoke twice: %s", r)
	}
	if r := c.Do("GET", "/admin/v0/keys/"+id, nil); r.Map()["revokedAt"] == nil {
		t.Fatalf("revoked key shows no revokedAt: %s", r)
	}
	metrics, err := http.Get(g.admin + "/metrics")
	if err != nil || metrics.StatusCode != 200 {
		t.Fatalf("admin /metrics: %v", err)
	}
	metrics.Body.Close()
	if r := (&apitest.Client{T: t, Base: g.admin}).Do("GET", "/debug/pprof/", nil); r.Status != 404 {
		t.Fatalf("profiles on the admin listener without PPROF_ENABLED: %d", r.Status)
	}
}

func TestConfigRequiresTheInternalAuthSecret(t *testing.T) {
	base := map[string]string{"DATABASE_URL": "postgres://x", "ADMIN_TOKEN": adminToken,
		"KEY_HASH_PEPPER": strings.Repeat("p", 32)}
	for name, tc := range map[string]struct {
		secret string
		want   string // "" when accepted
	}{
		"missing": {"", "INTERNAL_AUTH_SECRET: is required"},
		"short":   {strings.Repeat("s", 31), "INTERNAL_AUTH_SECRET: must hold at least 32 bytes"},
		"good":    {strings.Repeat("s", 32), ""},
	} {
		env := map[string]string{"INTERNAL_AUTH_SECRET": tc.secret}
		for k, v := range base {
			env[k] = v
		}
		c, err := ConfigFromEnv(config.FromMap(env))
		switch {
		case tc.want == "" && (err != nil || len(c.InternalAuthSecret) != 32 || c.Pprof):
			t.Errorf("%s: %v (pprof %v)", name, err, c.Pprof)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || strings.Count(err.Error(), "INTERNAL_AUTH_SECRET") != 1):
			t.Errorf("%s: the gateway must not start without a valid INTERNAL_AUTH_SECRET, got %v", name, err)
		}
	}
}

func TestOpenAPIIsPublic(t *testing.T) {
	g := start(t, pgtest.NewDatabase(t), nil)
	r := g.client(t, "").Do("GET", "/v0/openapi.json", nil)
	if r.Status != 200 || r.Map()["openapi"] != "3.0.3" {
		t.Fatalf("openapi.json: %d", r.Status)
	}
	if r := (&apitest.Client{T: t, Base: g.public}).Do("GET", "/metrics", nil); r.Status != 401 {
		t.Fatalf("/metrics must not be public on the API listener: %d", r.Status)
	}
}

func TestBodyLimitAndBadInput(t *testing.T) {
	var hits atomic.Int32
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer up.Close()
	g := start(t, pgtest.NewDatabase(t), map[string]string{"topics": up.URL})
	_, key := g.newKey(t, map[string]any{"tenantIds": []string{"acme"}})
	big := apitest.Raw(`{"title":"` + strings.Repeat("a", 1<<20) + `"}`)
	r := g.client(t, key).Do("POST", "/v0/topics", big)
	if r.Status != 400 || code(t, r) != "VALIDATION_ERROR" {
		t.Fatalf("oversized body: %d %s", r.Status, r.Map()["code"])
	}
	if hits.Load() != 0 {
		t.Fatal("oversized body reached the service")
	}
}

// Credentials that disagree are no credentials: a request carrying x-api-key twice with
// different values is refused with 401, whichever of them is valid (it used to be served
// with the first key's tenant).
func TestDisagreeingAPIKeysAreRefused(t *testing.T) {
	up := echo(t)
	g := start(t, pgtest.NewDatabase(t), map[string]string{"topics": up.URL})
	_, keyA := g.newKey(t, map[string]any{"tenantIds": []string{"acme"}})
	_, keyB := g.newKey(t, map[string]any{"tenantIds": []string{"globex"}})
	for _, tc := range []struct {
		name   string
		keys   []string
		status int
	}{
		{"A's key then B's key", []string{keyA, keyB}, 401},
		{"B's key then A's key", []string{keyB, keyA}, 401},
		{"A's key then garbage", []string{keyA, "garbage"}, 401},
		{"garbage then A's key", []string{"garbage", keyA}, 401},
		{"A's key then an empty one", []string{keyA, ""}, 401},
		{"A's key twice agrees", []string{keyA, keyA}, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", g.public+"/v0/topics", nil)
			for _, k := range tc.keys {
				req.Header.Add("x-api-key", k)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("x-api-key sent as %d headers: status %d, want %d (disagreeing credentials must be refused): %s",
					len(tc.keys), resp.StatusCode, tc.status, body)
			}
		})
	}
}

// After a service restarts, every pooled connection to it is stale, not only one: a
// request must not fail because its retry took a second stale connection (a restart
// after a burst of concurrent requests used to answer 503 until the pool was drained).
func TestUpstreamRestartWithManyPooledConnections(t *testing.T) {
	release := make(chan struct{})
	var arrived atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v0/topics/hold" {
			arrived.Add(1)
			<-release
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{}`))
	}))
	t.Cleanup(up.Close)
	g := start(t, pgtest.NewDatabase(t), map[string]string{"topics": up.URL})
	_, key := g.newKey(t, map[string]any{"tenantIds": []string{"acme"}})
	c := g.client(t, key)
	c.Contract = nil // the upstream is not the real topics service
	// Sixteen requests at once leave sixteen pooled connections behind.
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() { defer wg.Done(); c.Do("GET", "/v0/topics/hold", nil) }()
	}
	testwait.For(t, 10*time.Second, "the sixteen requests to reach the upstream", func() (bool, string) {
		n := arrived.Load()
		return n >= 16, fmt.Sprintf("%d arrived", n)
	})
	close(release)
	wg.Wait()
	up.CloseClientConnections() // the service restarted: all sixteen are stale
	for i := range 3 {
		if r := c.Do("GET", "/v0/topics", nil); r.Status != 200 {
			t.Fatalf("request %d after the upstream closed its %d pooled connections: %s", i+1, 16, r)
		}
	}
}

// A key works on the replica that created it from the moment its creation is answered,
// even while the cache reloads: a reload that read the database before the key was
// committed must not store its older view over the key (it did, and the key answered
// 401 until the next reload).
func TestNewKeyWorksAtOnceDuringReloads(t *testing.T) {
	up := echo(t)
	g := start(t, pgtest.NewDatabase(t), map[string]string{"topics": up.URL})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // reloads back to back, as after a burst of notifications
		defer wg.Done()
		for ctx.Err() == nil {
			_ = g.app.cache.Load(ctx)
		}
	}()
	defer wg.Wait()
	defer cancel()
	for i := range 40 {
		_, key := g.newKey(t, map[string]any{"tenantIds": []string{"acme"}})
		c := g.client(t, key)
		c.Contract = nil // the echo upstream is not the real topics service
		if r := c.Do("GET", "/v0/topics", nil); r.Status != 200 {
			t.Fatalf("key %d, used as soon as it was created: %s (a reload dropped it)", i+1, r)
		}
	}
}
