package telemetry

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/gofiber/fiber/v2"
	"go.opentelemetry.io/otel/trace"

	"github.com/customerapi/platform/libs/apierror"
)

func unsampledSetup(t *testing.T) *Tracing {
	t.Helper()
	for _, v := range []string{"OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_TRACES_SAMPLER"} {
		t.Setenv(v, "")
	}
	tr, err := SetupTracing(context.Background(), "test")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tr.Tracer("t").(unsampledTracer); !ok {
		t.Fatal("with nothing exporting, the tracer is not marked unsampled")
	}
	return tr
}

// When nothing samples, the server span made without the SDK has what the SDK's
// NeverSample span has: the parent's trace ID (or a new one), a new span ID, the
// parent's flags without "sampled", the parent's trace state, no recording.
func TestUnsampledServerSpanIsTheSDKs(t *testing.T) {
	tr := unsampledSetup(t)
	u := tr.Tracer("t").(unsampledTracer)
	sdk := tr.Provider.Tracer("t")
	ts, _ := trace.ParseTraceState("vendor=x")
	parents := map[string]trace.SpanContext{
		"none": {},
		"sampled, with state": trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1, 2}, SpanID: trace.SpanID{3},
			TraceFlags: trace.FlagsSampled | trace.FlagsRandom, TraceState: ts, Remote: true}),
		"not sampled": trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{4}, SpanID: trace.SpanID{5}, Remote: true}),
	}
	for name, parent := range parents {
		ctx := context.Background()
		if parent.IsValid() {
			ctx = trace.ContextWithRemoteSpanContext(ctx, parent)
		}
		_, ours := u.startServer(ctx)
		_, theirs := sdk.Start(ctx, "GET")
		o, s := ours.SpanContext(), theirs.SpanContext()
		if !o.IsValid() || ours.IsRecording() || theirs.IsRecording() {
			t.Fatalf("%s: ours %v (recording %v)", name, o, ours.IsRecording())
		}
		if parent.IsValid() && (o.TraceID() != parent.TraceID() || s.TraceID() != parent.TraceID()) {
			t.Errorf("%s: trace %s, the SDK's %s, the parent's %s", name, o.TraceID(), s.TraceID(), parent.TraceID())
		}
		if !parent.IsValid() && o.TraceID() == s.TraceID() {
			t.Errorf("%s: not a new trace ID", name)
		}
		if o.SpanID() == parent.SpanID() || o.SpanID() == s.SpanID() {
			t.Errorf("%s: not a new span ID", name)
		}
		if o.TraceFlags() != s.TraceFlags() || o.TraceState().String() != s.TraceState().String() || o.IsRemote() != s.IsRemote() {
			t.Errorf("%s: ours %+v, the SDK's %+v", name, o, s)
		}
	}
}

// Through the middleware: an incoming traceparent is continued to the handlers' context.
func TestUnsampledMiddlewareContinuesTheTrace(t *testing.T) {
	tr := unsampledSetup(t)
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Use(Middleware(tr.Tracer("t"), NewHTTPMetrics(NewRegistry(), "t"), log, apierror.Renderer{}))
	var got trace.SpanContext
	app.Get("/x", func(c *fiber.Ctx) error {
		got = trace.SpanContextFromContext(c.UserContext())
		return c.SendStatus(204)
	})
	req := httptest.NewRequest("GET", "/x", nil)
	req.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	resp, err := app.Test(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || got.SpanID().String() == "00f067aa0ba902b7" ||
		!got.SpanID().IsValid() || got.IsSampled() {
		t.Fatalf("handlers see %+v", got)
	}
	if tp := string(AppendTraceparent(nil, got)); tp[:35] != "00-4bf92f3577b34da6a3ce929d0e0e4736" || tp[len(tp)-2:] != "00" {
		t.Fatalf("traceparent sent on: %s", tp)
	}
}
