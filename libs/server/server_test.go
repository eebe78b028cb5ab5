package server

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/customerapi/platform/libs/apierror"
	"github.com/customerapi/platform/libs/telemetry"
	"github.com/customerapi/platform/libs/testwait"
)

func newTestServer(t *testing.T, checks ...Check) *Server {
	t.Helper()
	s := New(Config{Name: "test", BaseURL: "http://api.test", Metrics: true}, Deps{
		Log:      slog.New(slog.NewJSONHandler(io.Discard, nil)),
		Tracer:   noop.NewTracerProvider().Tracer("t"),
		Registry: telemetry.NewRegistry(),
		Checks:   checks,
	})
	s.App.Get("/panic", func(c *fiber.Ctx) error { panic("boom") })
	s.App.Get("/conflict", func(c *fiber.Ctx) error { return apierror.Conflict("already there") })
	s.App.Post("/echo", func(c *fiber.Ctx) error { return c.Send(c.Body()) })
	s.App.Get("/plain-error", func(c *fiber.Ctx) error { return errors.New("db exploded") })
	return s
}

func do(t *testing.T, s *Server, method, path, body string, hdr map[string]string) (int, map[string]string, []byte) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := s.App.Test(req, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	h := map[string]string{}
	for k := range resp.Header {
		h[k] = resp.Header.Get(k)
	}
	return resp.StatusCode, h, b
}

func envelope(t *testing.T, b []byte) apierror.Envelope {
	t.Helper()
	var e apierror.Envelope
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatalf("not an envelope: %s", b)
	}
	return e
}

func TestErrorsUseTheEnvelope(t *testing.T) {
	s := newTestServer(t)
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		code                     apierror.Code
	}{
		{"unknown route", "GET", "/nope", "", 404, apierror.CodeNotFound},
		{"method not allowed", "DELETE", "/conflict", "", 405, apierror.CodeMethodNotAllowed},
		{"panic", "GET", "/panic", "", 500, apierror.CodeInternal},
		{"plain error", "GET", "/plain-error", "", 500, apierror.CodeInternal},
		{"api error", "GET", "/conflict", "", 409, apierror.CodeConflict},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, hdr, body := do(t, s, tc.method, tc.path, tc.body, nil)
			e := envelope(t, body)
			if status != tc.status || e.Status != tc.status || e.Code != tc.code {
				t.Fatalf("status=%d envelope=%+v", status, e)
			}
			if hdr["Content-Type"] != "application/json" {
				t.Errorf("Content-Type = %q", hdr["Content-Type"])
			}
			if e.RequestID == "" || hdr["X-Request-Id"] != e.RequestID {
				t.Errorf("requestId %q vs header %q", e.RequestID, hdr["X-Request-Id"])
			}
			if e.Type != "http://api.test/errors/"+strings.ToLower(string(tc.code)) || e.Title == "" || e.Detail == "" {
				t.Errorf("envelope = %+v", e)
			}
			if strings.Contains(string(body), "exploded") || strings.Contains(string(body), "boom") {
				t.Errorf("internal cause leaked: %s", body)
			}
		})
	}
}

func TestRequestID(t *testing.T) {
	s := newTestServer(t)
	_, hdr, body := do(t, s, "GET", "/conflict", "", map[string]string{"X-Request-Id": "client-id-1"})
	if hdr["X-Request-Id"] != "client-id-1" || envelope(t, body).RequestID != "client-id-1" {
		t.Fatalf("sane client ID not echoed: %v", hdr)
	}
	_, hdr, _ = do(t, s, "GET", "/conflict", "", map[string]string{"X-Request-Id": strings.Repeat("x", 200)})
	if hdr["X-Request-Id"] == "" || len(hdr["X-Request-Id"]) > 128 {
		t.Fatalf("insane client ID kept: %q", hdr["X-Request-Id"])
	}
	_, hdr, _ = do(t, s, "GET", "/healthz", "", map[string]string{"X-Request-Id": "bad id"})
	if !strings.HasPrefix(hdr["X-Request-Id"], "req_") {
		t.Fatalf("X-Request-Id = %q", hdr["X-Request-Id"])
	}
}

func TestBodyTooLarge(t *testing.T) {
	s := newTestServer(t)
	addr := listen(t, s)
	// The server answers from the Content-Length alone, before reading the body.
	status, b := rawRequest(t, addr, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"+
		"Content-Length: "+strconv.Itoa(4*apierror.MaxBodyBytes+10)+"\r\n\r\n")
	e := envelope(t, b)
	if status != 400 || e.Code != apierror.CodeValidation {
		t.Fatalf("status %d, envelope %+v", status, e)
	}
}

func TestProbesAndMetrics(t *testing.T) {
	healthy := newTestServer(t, Check{Name: "db", Fn: func(context.Context) error { return nil }})
	if status, _, _ := do(t, healthy, "GET", "/readyz", "", nil); status != 200 {
		t.Fatalf("readyz = %d", status)
	}
	sick := newTestServer(t, Check{Name: "db", Fn: func(context.Context) error { return errors.New("down") }})
	status, _, body := do(t, sick, "GET", "/readyz", "", nil)
	if status != 503 || envelope(t, body).Code != apierror.CodeServiceUnavailable || !strings.Contains(string(body), `"db":"failing"`) {
		t.Fatalf("readyz = %d %s", status, body)
	}
	if status, _, _ := do(t, sick, "GET", "/healthz", "", nil); status != 200 {
		t.Fatalf("healthz = %d", status)
	}
	degraded := newTestServer(t, Check{Name: "kafka", Optional: true, Fn: func(context.Context) error { return errors.New("away") }})
	if status, _, body := do(t, degraded, "GET", "/readyz", "", nil); status != 200 || !strings.Contains(string(body), `"kafka":"failing"`) {
		t.Fatalf("optional check failing: %d %s", status, body)
	}
	remote := newTestServer(t, Check{Name: "topics", Remote: true, Fn: func(context.Context) error { return errors.New("down") }})
	if status, _, body := do(t, remote, "GET", "/readyz", "", nil); status != 503 || !strings.Contains(string(body), `"topics":"failing"`) {
		t.Fatalf("remote check failing, /readyz: %d %s", status, body)
	}
	if status, _, body := do(t, remote, "GET", "/readyz/local", "", nil); status != 200 {
		t.Fatalf("remote check failing, /readyz/local: %d %s", status, body)
	}
	if status, _, body := do(t, sick, "GET", "/readyz/local", "", nil); status != 503 {
		t.Fatalf("local check failing, /readyz/local: %d %s", status, body)
	}
	do(t, healthy, "GET", "/conflict", "", nil)
	_, _, metrics := do(t, healthy, "GET", "/metrics", "", nil)
	if !strings.Contains(string(metrics), `http_server_requests_total{method="GET",route="/conflict",server="test",status="409"} 1`) {
		t.Fatalf("metrics lack the request:\n%s", metrics)
	}
}

func TestGracefulShutdownFailsReadiness(t *testing.T) {
	s := newTestServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	s.cfg.Addr = "127.0.0.1:0"
	go func() { done <- s.Run(ctx) }()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if failed, _ := s.Ready(context.Background(), false); failed["server"] == "" {
		t.Fatalf("ready after shutdown: %v", failed)
	}
}

// gzipped compresses b with gzip once.
func gzipped(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// A compressed body is never decompressed: any Content-Encoding but identity is refused
// with 415 before a handler can read the body (a 2.6 KB double-gzipped body of 1 GiB of
// zeros used to be inflated in memory by c.Body()).
func TestCompressedBodiesAreRefused(t *testing.T) {
	s := newTestServer(t)
	bomb := gzipped(t, gzipped(t, make([]byte, 8<<20)))
	for _, tc := range []struct {
		name, encoding string
		want           int
	}{
		{"gzip twice", "gzip, gzip", fiber.StatusUnsupportedMediaType},
		{"gzip", "gzip", fiber.StatusUnsupportedMediaType},
		{"deflate", "deflate", fiber.StatusUnsupportedMediaType},
		{"br", "br", fiber.StatusUnsupportedMediaType},
		{"unknown", "x-custom", fiber.StatusUnsupportedMediaType},
		{"identity is no encoding", "identity", fiber.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, _, b := do(t, s, "POST", "/echo", string(bomb), map[string]string{"Content-Encoding": tc.encoding})
			if status != tc.want {
				t.Fatalf("Content-Encoding %q: status %d, want %d (compressed bodies must be refused, not inflated)", tc.encoding, status, tc.want)
			}
			if tc.want == fiber.StatusOK {
				if !bytes.Equal(b, bomb) {
					t.Fatalf("identity body was changed on the way to the handler")
				}
				return
			}
			if e := envelope(t, b); e.Code != apierror.CodeValidation || e.Status != tc.want {
				t.Fatalf("415 must be in the envelope with VALIDATION_ERROR, got %+v", e)
			}
		})
	}
}

// Every Content-Encoding line counts, whatever the case of its name: an identity line
// does not hide a gzip line after it.
func TestCompressedBodiesAreRefusedOnAnyContentEncodingLine(t *testing.T) {
	s := newTestServer(t)
	req := httptest.NewRequest("POST", "/echo", bytes.NewReader(gzipped(t, []byte("{}"))))
	req.Header["content-encoding"] = []string{"identity", "gzip"} // two lines, as sent
	resp, err := s.App.Test(req, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != fiber.StatusUnsupportedMediaType {
		t.Fatalf("lines content-encoding: identity and content-encoding: gzip gave %d, want 415", resp.StatusCode)
	}
}

// The check runs on every request of every service and the gateway, so a request
// without a Content-Encoding line must not allocate for it.
func TestTheEncodingCheckAllocatesNothing(t *testing.T) {
	app := fiber.New()
	app.Use(refuseEncodedBodies())
	app.Get("/", func(*fiber.Ctx) error { return nil })
	h := app.Handler()
	var ctx fasthttp.RequestCtx
	ctx.Request.SetRequestURI("/")
	ctx.Request.Header.Set("User-Agent", "a client whose name is longer than thirty-two bytes")
	ctx.Request.Header.Set("Accept", "application/json")
	h(&ctx) // warm Fiber's pools
	if n := testing.AllocsPerRun(200, func() { h(&ctx) }); n != 0 {
		t.Fatalf("a request without Content-Encoding cost %.1f allocations in the encoding check, want 0", n)
	}
}

// /readyz is public on the gateway, so it must be cheap and tell strangers nothing:
// concurrent calls share one run of the checks (and a result is reused for a second),
// and the checks' error texts, which name hosts, users and ports, are shown only to a
// caller with the details token.
func TestReadyzIsCheapAndDiscreet(t *testing.T) {
	var runs atomic.Int64
	release := make(chan struct{})
	s := New(Config{Name: "test", BaseURL: "http://api.test", ReadyDetailsToken: "operator-token-0123456789"}, Deps{
		Log: slog.New(slog.NewJSONHandler(io.Discard, nil)),
		Checks: []Check{{Name: "database", Fn: func(context.Context) error {
			runs.Add(1)
			<-release
			return errors.New("dial tcp 10.0.0.5:5432: password authentication failed for user \"svc\"")
		}}},
	})
	var wg sync.WaitGroup
	bodies := make(chan string, 100)
	for range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			status, _, body := do(t, s, "GET", "/readyz", "", nil)
			if status != 503 {
				t.Errorf("readyz with a failing check = %d, want 503", status)
			}
			bodies <- string(body)
		}()
	}
	testwait.For(t, 5*time.Second, "the first readiness check to start", func() (bool, string) {
		n := runs.Load()
		return n >= 1, fmt.Sprintf("%d runs", n)
	})
	close(release)
	wg.Wait()
	close(bodies)
	if n := runs.Load(); n > 2 {
		t.Fatalf("100 concurrent /readyz calls ran the checks %d times, want them to share one run", n)
	}
	for b := range bodies {
		if strings.Contains(b, "10.0.0.5") || strings.Contains(b, "password") {
			t.Fatalf("/readyz without the details token reveals the check's error text: %s", b)
		}
		if !strings.Contains(b, `"database":"failing"`) {
			t.Fatalf("/readyz must still name the failing check: %s", b)
		}
	}
	for _, tc := range []struct {
		auth   string
		reveal bool
	}{
		{"Bearer operator-token-0123456789", true},
		{"Bearer wrong-token", false},
		{"operator-token-0123456789", false},
	} {
		_, _, body := do(t, s, "GET", "/readyz", "", map[string]string{"Authorization": tc.auth})
		if got := strings.Contains(string(body), "password authentication failed"); got != tc.reveal {
			t.Fatalf("Authorization %q: error text shown = %v, want %v: %s", tc.auth, got, tc.reveal, body)
		}
	}
}

// An answer's '<', '>' and '&' take one byte each: with encoding/json's HTML escaping
// each took six (\u003c), so a stored string of 20,000 '<' became a 120 kB answer.
func TestAnswersAreNotHTMLEscaped(t *testing.T) {
	s := newTestServer(t)
	s.App.Get("/html", func(c *fiber.Ctx) error { return c.JSON(fiber.Map{"content": "<b>&</b>"}) })
	status, hdr, body := do(t, s, "GET", "/html", "", nil)
	if want := `{"content":"<b>&</b>"}`; status != 200 || string(body) != want {
		t.Fatalf("GET /html = %d %s, want 200 %s: JSON answers must not escape '<', '>' and '&' for HTML", status, body, want)
	}
	if hdr["Content-Type"] != "application/json" {
		t.Fatalf("Content-Type = %q, want application/json", hdr["Content-Type"])
	}
}
