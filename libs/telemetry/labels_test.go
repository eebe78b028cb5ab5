package telemetry

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/customerapi/platform/libs/apierror"
)

// Label values must not alias the request's buffers: fasthttp reuses them for the next
// request on the connection, so a PATCH recorded from the header's bytes turned into
// "PAT" or "GET…" later, and /metrics failed with "collected metric … was collected
// before" (a 500 to every scrape).
func TestLabelsSurviveTheNextRequest(t *testing.T) {
	reg := NewRegistry()
	m := NewHTTPMetrics(reg, "test")
	app := fiber.New()
	app.Use(Middleware(noop.NewTracerProvider().Tracer("t"), m, slog.New(slog.NewTextHandler(io.Discard, nil)), apierror.Renderer{}))
	app.All("/v0/things", func(c *fiber.Ctx) error { return c.SendStatus(200) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = app.Listener(ln) }()
	defer func() { _ = app.Shutdown() }()
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}} // one connection: its buffers are reused
	for _, method := range []string{"PATCH", "GET", "DELETE", "POST", "GET", "OPTIONS", "GET"} {
		req, _ := http.NewRequest(method, "http://"+ln.Addr().String()+"/v0/things", strings.NewReader(""))
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if _, err := reg.Gather(); err != nil {
		t.Fatalf("the metrics must gather after requests on one connection: %v", err)
	}
	for _, method := range []string{"PATCH", "GET", "DELETE", "POST", "OPTIONS"} {
		if n := testutil.ToFloat64(m.requests.WithLabelValues(method, "/v0/things", "200")); n < 1 {
			t.Fatalf("no request counted for method %s: the label was overwritten", method)
		}
	}
}
