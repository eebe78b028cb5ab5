package telemetry

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

func TestAppendTraceparentIsThePropagators(t *testing.T) {
	for _, flags := range []trace.TraceFlags{0, trace.FlagsSampled, 0xff} {
		sc := trace.NewSpanContext(trace.SpanContextConfig{
			TraceID:    trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
			SpanID:     trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
			TraceFlags: flags,
		})
		ctx := trace.ContextWithSpanContext(context.Background(), sc)
		carrier := propagation.MapCarrier{}
		Propagator.Inject(ctx, carrier)
		got, simple := InjectSimple(ctx)
		if !simple || !got.Equal(sc) {
			t.Fatalf("InjectSimple = %v, %v", got, simple)
		}
		if tp := string(AppendTraceparent(nil, sc)); tp != carrier[TraceparentHeader] || len(carrier) != 1 {
			t.Errorf("flags %x: AppendTraceparent = %q, the propagator wrote %v", flags, tp, carrier)
		}
	}
	ts, _ := trace.ParseTraceState("vendor=x")
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1}, TraceState: ts})
	if _, simple := InjectSimple(trace.ContextWithSpanContext(context.Background(), sc)); simple {
		t.Error("a trace state is not simple")
	}
}
