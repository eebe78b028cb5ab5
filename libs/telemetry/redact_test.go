package telemetry

import (
	"bytes"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/customerapi/platform/libs/apierror"
)

// secretToken stands for a signed download token: a bearer credential.
const secretToken = "eyJ0IjoiYWNtZSIsImEiOiJhc3NldF8xIn0.c2lnbmF0dXJlLW9mLXRoZS10b2tlbg"

// A credential in a path (a signed download's token) reaches neither the access log nor
// a span: it is redacted wherever the route names its segment as one, under a service's
// own route (/files/:token) and under a template a RouteName gives (the gateway's
// /v0/asset_files/{token}); the redaction keeps a prefix and a hash to correlate by.
func TestCredentialsInPathsAreRedactedInLogsAndSpans(t *testing.T) {
	for _, tc := range []struct {
		name, route, path string
		routeName         func(*fiber.Ctx) string
	}{
		{name: "service route", route: "/files/:token", path: "/files/" + secretToken},
		{name: "gateway template", route: "/v0/asset_files/*", path: "/v0/asset_files/" + secretToken,
			routeName: func(*fiber.Ctx) string { return "/v0/asset_files/{token}" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			rec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
			m := NewHTTPMetrics(NewRegistry(), "t")
			m.RouteName = tc.routeName
			app := fiber.New(fiber.Config{DisableStartupMessage: true})
			app.Use(Middleware(tp.Tracer("t"), m, NewLogger(&logs, "t", "info"), apierror.Renderer{}))
			app.Get(tc.route, func(c *fiber.Ctx) error { return c.SendStatus(200) })
			resp, err := app.Test(httptest.NewRequest("GET", tc.path+"?download=1", nil))
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()

			want := RedactCredential(secretToken)
			if strings.Contains(logs.String(), secretToken) || strings.Contains(logs.String(), secretToken[20:]) {
				t.Fatalf("the access log holds a download token (a bearer credential): %s", logs.String())
			}
			if !strings.Contains(logs.String(), want) {
				t.Fatalf("the access log lacks the token's redaction %q to correlate by: %s", want, logs.String())
			}
			spans := rec.Ended()
			if len(spans) != 1 {
				t.Fatalf("%d spans recorded, want 1", len(spans))
			}
			path := ""
			for _, a := range spans[0].Attributes() {
				if strings.Contains(a.Value.String(), secretToken[20:]) {
					t.Fatalf("span attribute %s holds a download token (a bearer credential): %s", a.Key, a.Value.String())
				}
				if a.Key == "url.path" {
					path = a.Value.String()
				}
			}
			if !strings.HasSuffix(path, "/"+want) {
				t.Fatalf("the span's url.path is %q, want the path with the token redacted (%s)", path, want)
			}
			if strings.Contains(spans[0].Name(), secretToken[20:]) {
				t.Fatalf("the span's name holds a download token: %s", spans[0].Name())
			}
		})
	}
}

func TestRedactPath(t *testing.T) {
	for _, tc := range []struct{ path, route, want string }{
		{"/files/abcdefghijkl", "/files/:token", "/files/" + RedactCredential("abcdefghijkl")},
		{"/v0/assets/asset_1", "/v0/assets/:asset_id", "/v0/assets/asset_1"},
		{"/v0/keys/k1/secret/s3cr3t-value", "/v0/keys/{key_id}/secret/{secret}", "/v0/keys/k1/secret/" + RedactCredential("s3cr3t-value")},
		{"/hooks/x/sig-value", "/hooks/:id/:signature", "/hooks/x/" + RedactCredential("sig-value")},
		{"/files/abc", "unmatched", "/files/abc"},
	} {
		if got := RedactPath(tc.path, tc.route); got != tc.want {
			t.Errorf("RedactPath(%q, %q) = %q, want %q", tc.path, tc.route, got, tc.want)
		}
	}
	if r := RedactCredential("short"); strings.Contains(r, "short") {
		t.Errorf("a short credential is kept whole in its redaction: %s", r)
	}
}
