package server

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/customerapi/platform/libs/telemetry"
)

// A catch-all route ("/*", the gateway's) is counted under the name RouteName gives it,
// not under the pattern, and the access log line carries the caller a handler set on the
// request's context.
func TestRouteNameAndCallerInTheAccessLog(t *testing.T) {
	var logs bytes.Buffer
	s := New(Config{Name: "test", BaseURL: "http://api.test", Metrics: true,
		RouteName: func(c *fiber.Ctx) string {
			if strings.HasPrefix(c.Path(), "/v0/things/") {
				return "/v0/things/{thing_id}"
			}
			return ""
		}}, Deps{
		Log:      telemetry.NewLogger(&logs, "test", "info"),
		Tracer:   noop.NewTracerProvider().Tracer("t"),
		Registry: telemetry.NewRegistry(),
	})
	s.App.All("/*", func(c *fiber.Ctx) error {
		c.SetUserContext(telemetry.WithCaller(c.UserContext(), "acme", "key_1"))
		return c.SendStatus(204)
	})
	do(t, s, "GET", "/v0/things/t1", "", nil)
	do(t, s, "GET", "/v0/other", "", nil)
	_, _, metrics := do(t, s, "GET", "/metrics", "", nil)
	for _, want := range []string{
		`http_server_requests_total{method="GET",route="/v0/things/{thing_id}",server="test",status="204"} 1`,
		`http_server_requests_total{method="GET",route="/*",server="test",status="204"} 1`,
	} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("metrics lack %s:\n%s", want, metrics)
		}
	}
	line, _, _ := strings.Cut(logs.String(), "\n")
	var rec map[string]any
	if err := json.Unmarshal([]byte(line), &rec); err != nil {
		t.Fatalf("access log %q: %v", line, err)
	}
	if rec["msg"] != "request" || rec["route"] != "/v0/things/{thing_id}" || rec["tenant_id"] != "acme" || rec["key_id"] != "key_1" {
		t.Fatalf("access log line %v: want route /v0/things/{thing_id}, tenant_id acme, key_id key_1", rec)
	}
}

// Label values must not alias a request's buffer, which the next request reuses: a
// method counted once must stay the method it was (seen as "GETT" for a POST, and as
// duplicate series that made every scrape fail with 500).
func TestRequestLabelsOutliveTheRequest(t *testing.T) {
	s := newTestServer(t)
	addr := listen(t, s)
	for i := 0; i < 3; i++ {
		rawRequest(t, addr, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi")
		rawRequest(t, addr, "GET /conflict HTTP/1.1\r\nHost: x\r\n\r\n")
		rawRequest(t, addr, "DELETE /conflict HTTP/1.1\r\nHost: x\r\n\r\n")
	}
	status, body := rawRequest(t, addr, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
	if status != 200 {
		t.Fatalf("/metrics = %d: %s", status, body)
	}
	for _, want := range []string{
		`http_server_requests_total{method="POST",route="/echo",server="test",status="200"} 3`,
		`http_server_requests_total{method="GET",route="/conflict",server="test",status="409"} 3`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %s:\n%s", want, body)
		}
	}
}
