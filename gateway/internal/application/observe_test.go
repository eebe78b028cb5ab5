package application

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/customerapi/platform/libs/postgres/pgtest"
	"github.com/customerapi/platform/libs/telemetry"
)

// syncBuffer is a log sink the gateway's goroutines may write to while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func scrape(t *testing.T, g *gw) string {
	t.Helper()
	resp, err := http.Get(g.admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// The gateway's request metrics name the upstream service and the API document's route
// template of every request (not the catch-all "/*" the proxy is mounted on), count what
// the gateway refuses itself by reason, and its spans and log lines name the tenant and
// key of the request.
func TestRequestMetricsTracesAndLogs(t *testing.T) {
	up := echo(t)
	logs := &syncBuffer{}
	spans := tracetest.NewSpanRecorder()
	tracing := &telemetry.Tracing{Provider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))}
	g := startWith(t, observed{log: telemetry.NewLogger(logs, "gateway", "info"), tracing: tracing},
		pgtest.NewDatabase(t), map[string]string{"topics": up.URL})
	keyID, key := g.newKey(t, map[string]any{"tenantIds": []string{"acme"}})
	_, multi := g.newKey(t, map[string]any{"tenantIds": []string{"acme", "globex"}})

	c := g.client(t, key)
	c.Contract = nil // the echo upstream is not the real topics service
	for _, path := range []string{"/v0/topics/top_1", "/v0/topics/top_2", "/v0/topics/top_2/entries/e_1", "/v0/topics/a/b/c/d"} {
		if r := c.Do("GET", path, nil); r.Status != 200 {
			t.Fatalf("GET %s: %s", path, r)
		}
	}
	g.client(t, "").Do("GET", "/v0/topics", nil)                              // 401 missing key
	g.client(t, "capi_"+strings.Repeat("x", 40)).Do("GET", "/v0/topics", nil) // 401 unknown key
	g.client(t, multi).Do("GET", "/v0/topics", nil)                           // 403
	g.client(t, key).Do("GET", "/v0/nowhere", nil)                            // 404 from the gateway

	m := scrape(t, g)
	for _, want := range []string{
		`gateway_requests_total{code="200",method="GET",route="/v0/topics/{topic_id}",upstream="topics"} 2`,
		`gateway_requests_total{code="200",method="GET",route="/v0/topics/{topic_id}/entries/{topic_entry_id}",upstream="topics"} 1`,
		`gateway_requests_total{code="200",method="GET",route="unmatched",upstream="topics"} 1`,
		`gateway_requests_total{code="401",method="GET",route="/v0/topics",upstream="topics"} 2`,
		`gateway_requests_total{code="403",method="GET",route="/v0/topics",upstream="topics"} 1`,
		`gateway_requests_total{code="404",method="GET",route="unmatched",upstream="gateway"} 1`,
		`gateway_request_duration_seconds_count{method="GET",route="/v0/topics/{topic_id}",upstream="topics"} 2`,
		`http_server_requests_total{method="GET",route="/v0/topics/{topic_id}",server="gateway",status="200"} 2`,
		`http_server_requests_total{method="GET",route="/v0/topics",server="gateway",status="401"} 2`,
		`gateway_refusals_total{code="401",reason="missing_key"} 1`,
		`gateway_refusals_total{code="401",reason="unknown_key"} 1`,
		`gateway_refusals_total{code="403",reason="multi_tenant_key"} 1`,
		`gateway_refusals_total{code="429",reason="rate_limited"} 0`,
		`gateway_ratelimit_decisions_total{decided_by="local",result="allowed"}`,
		`pgxpool_acquired_connections{pool="gateway"}`,
		`customerapi_build_info{go_version=`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(m, `route="/*"`) {
		t.Errorf("a request is still counted under the catch-all route /*")
	}

	// The access log line of a proxied request names its tenant and key, and its route.
	found := false
	sc := bufio.NewScanner(strings.NewReader(logs.String()))
	for sc.Scan() {
		var rec map[string]any
		if json.Unmarshal(sc.Bytes(), &rec) != nil || rec["msg"] != "request" || rec["path"] != "/v0/topics/top_1" {
			continue
		}
		found = true
		if rec["tenant_id"] != "acme" || rec["key_id"] != keyID || rec["route"] != "/v0/topics/{topic_id}" {
			t.Errorf("access log line %v: want tenant_id acme, key_id %s, route /v0/topics/{topic_id}", rec, keyID)
		}
	}
	if !found {
		t.Fatalf("no access log line for /v0/topics/top_1 in:\n%s", logs.String())
	}

	// The server span of the request is named after its route and carries the caller.
	var span sdktrace.ReadOnlySpan
	for _, s := range spans.Ended() {
		if s.Name() == "GET /v0/topics/{topic_id}" {
			span = s
		}
	}
	if span == nil {
		t.Fatalf("no span named after the route among %d", len(spans.Ended()))
	}
	attrs := map[string]string{}
	for _, a := range span.Attributes() {
		attrs[string(a.Key)] = a.Value.String()
	}
	if attrs["tenant_id"] != "acme" || attrs["key_id"] != keyID {
		t.Errorf("span attributes %v: want tenant_id acme and key_id %s", attrs, keyID)
	}
}

// A Redis that accepts connections and never answers costs a request at most
// RATE_LIMIT_REDIS_TIMEOUT, not the Redis client's own read timeout (seconds), and the
// request is decided locally.
func TestHungRedisCostsAtMostTheTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var held []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c) // never answered
			mu.Unlock()
		}
	}()
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	}()
	up := echo(t)
	g := start(t, pgtest.NewDatabase(t), map[string]string{"topics": up.URL}, func(c *Config) {
		c.RedisURL = "redis://" + ln.Addr().String() + "/0"
		c.RedisTimeout = 50 * time.Millisecond
	})
	_, key := g.newKey(t, map[string]any{"tenantIds": []string{"acme"}})
	c := g.client(t, key)
	c.Contract = nil
	begin := time.Now()
	if r := c.Do("GET", "/v0/topics", nil); r.Status != 200 {
		t.Fatalf("got %s", r)
	}
	if d := time.Since(begin); d > time.Second {
		t.Fatalf("a request took %s with Redis hung: the rate limit must give up on Redis after RATE_LIMIT_REDIS_TIMEOUT (50ms)", d)
	}
	if n := scrape(t, g); !strings.Contains(n, "gateway_ratelimit_redis_failures_total 1") {
		t.Fatalf("the check was not decided locally:\n%s", n)
	}
}
