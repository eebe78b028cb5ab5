package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/customerapi/platform/libs/requestid"
)

func TestLoggerAddsRequestAndTraceIDs(t *testing.T) {
	var buf bytes.Buffer
	log := NewLogger(&buf, "svc", "info")
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{9}, SpanID: trace.SpanID{8}})
	ctx := trace.ContextWithSpanContext(requestid.With(context.Background(), "req_1"), sc)
	log.InfoContext(ctx, "hello")
	log.DebugContext(ctx, "hidden")
	var rec map[string]any
	if err := json.Unmarshal(bytes.TrimSpace(buf.Bytes()), &rec); err != nil {
		t.Fatalf("not one JSON line: %s", buf.String())
	}
	if rec["request_id"] != "req_1" || rec["trace_id"] != sc.TraceID().String() || rec["service"] != "svc" {
		t.Fatalf("record = %v", rec)
	}
	for level, want := range map[string]string{"debug": "DEBUG", "warn": "WARN", "error": "ERROR", "x": "INFO"} {
		if got := ParseLevel(level).String(); got != want {
			t.Errorf("ParseLevel(%q) = %s", level, got)
		}
	}
}
