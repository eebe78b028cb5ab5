package telemetry

import (
	"context"
	"encoding/hex"

	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/trace"
)

// TraceparentHeader is the W3C trace-context header.
const TraceparentHeader = "traceparent"

// AppendTraceparent appends the W3C traceparent value of sc ("00-<trace>-<span>-<flags>",
// as propagation.TraceContext writes it) to dst; sc must be valid.
func AppendTraceparent(dst []byte, sc trace.SpanContext) []byte {
	tid, sid := sc.TraceID(), sc.SpanID()
	dst = append(dst, "00-"...)
	dst = hex.AppendEncode(dst, tid[:])
	dst = append(dst, '-')
	dst = hex.AppendEncode(dst, sid[:])
	dst = append(dst, '-')
	return hex.AppendEncode(dst, []byte{byte(sc.TraceFlags() & (trace.FlagsSampled | trace.FlagsRandom))})
}

// InjectSimple reports whether Propagator's injection of ctx is only a traceparent (no
// tracestate, no baggage), which AppendTraceparent writes without its allocations; when
// false, the caller injects with Propagator.
func InjectSimple(ctx context.Context) (sc trace.SpanContext, simple bool) {
	sc = trace.SpanContextFromContext(ctx)
	return sc, sc.TraceState().Len() == 0 && baggage.FromContext(ctx).Len() == 0
}
