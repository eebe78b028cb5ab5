// Package telemetry sets up the three signals of every process: OpenTelemetry traces
// (configured by the standard OTEL_* variables), Prometheus metrics and slog JSON logs
// that carry the request ID and trace ID.
package telemetry

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"
)

// Propagator is the W3C trace-context and baggage propagator used on HTTP and Kafka.
var Propagator propagation.TextMapPropagator = propagation.NewCompositeTextMapPropagator(
	propagation.TraceContext{}, propagation.Baggage{})

// Tracing holds the process's tracer provider.
type Tracing struct {
	Provider *sdktrace.TracerProvider
	// unsampled: SetupTracing chose NeverSample (nothing exports, no sampler asked for).
	unsampled bool
}

// Tracer returns a named tracer of the provider. When nothing samples, it is marked so
// that the HTTP middleware makes its server spans without the SDK (see unsampledTracer);
// every other span still starts through the SDK.
func (t *Tracing) Tracer(name string) trace.Tracer {
	tr := t.Provider.Tracer(name)
	if t.unsampled {
		return unsampledTracer{tr}
	}
	return tr
}

// unsampledTracer is a tracer of a provider that samples nothing. Its Start is the SDK's;
// startServer makes the span the SDK would make under NeverSample, without its work: the
// parent's trace ID (or a new one), a new span ID, the parent's flags without "sampled",
// the parent's trace state, recording nothing. Logs carry its IDs and the traceparent
// sent on continues it, as before.
type unsampledTracer struct{ trace.Tracer }

func (unsampledTracer) startServer(ctx context.Context) (context.Context, trace.Span) {
	psc := trace.SpanContextFromContext(ctx)
	tid := psc.TraceID()
	for !tid.IsValid() {
		binary.NativeEndian.PutUint64(tid[:8], rand.Uint64())
		binary.NativeEndian.PutUint64(tid[8:], rand.Uint64())
	}
	var sid trace.SpanID
	for !sid.IsValid() {
		binary.NativeEndian.PutUint64(sid[:], rand.Uint64())
	}
	ctx = trace.ContextWithSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: tid, SpanID: sid, TraceFlags: psc.TraceFlags() &^ trace.FlagsSampled, TraceState: psc.TraceState(),
	}))
	return ctx, trace.SpanFromContext(ctx)
}

// Shutdown flushes pending spans; call it on exit.
func (t *Tracing) Shutdown(ctx context.Context) error { return t.Provider.Shutdown(ctx) }

// SetupTracing builds the tracer provider from the standard variables and installs it and
// the propagator as the process's OpenTelemetry globals (call it from main only).
//
//   - OTEL_TRACES_EXPORTER: "otlp", "none" or unset. Unset means otlp when an
//     OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT is set, else none: spans and trace IDs are still
//     made (logs carry them), just not exported.
//   - OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf" (default) or "grpc"; the OTLP exporters
//     read their endpoint, headers, timeout and TLS settings themselves.
//   - OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES name the resource (default: service).
//   - OTEL_TRACES_SAMPLER(_ARG) choose the sampler, read by the SDK.
func SetupTracing(ctx context.Context, service string) (*Tracing, error) {
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName(service)),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES override
		resource.WithProcessRuntimeName(), resource.WithHost())
	if err != nil {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	exp, err := exporterFromEnv(ctx)
	if err != nil {
		return nil, err
	}
	if exp != nil {
		opts = append(opts, sdktrace.WithBatcher(exp))
	} else if os.Getenv("OTEL_TRACES_SAMPLER") == "" {
		// Nothing exports spans, so record none: spans still get valid IDs (logs carry
		// them, traceparent still flows downstream) without the cost of recording.
		opts = append(opts, sdktrace.WithSampler(sdktrace.NeverSample()))
	}
	tp := sdktrace.NewTracerProvider(opts...)
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(Propagator)
	return &Tracing{Provider: tp, unsampled: exp == nil && os.Getenv("OTEL_TRACES_SAMPLER") == ""}, nil
}

// Setup prepares a process's logs and traces: a JSON logger at the given level and the
// tracer provider from the OTEL_* variables. shutdown flushes pending spans (bounded).
func Setup(ctx context.Context, service, level string) (log *slog.Logger, tracing *Tracing, shutdown func(), err error) {
	log = NewLogger(os.Stdout, service, level)
	tracing, err = SetupTracing(ctx, service)
	if err != nil {
		return nil, nil, nil, err
	}
	shutdown = func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = tracing.Shutdown(sctx)
	}
	return log, tracing, shutdown, nil
}

func exporterFromEnv(ctx context.Context) (sdktrace.SpanExporter, error) {
	kind := strings.ToLower(strings.TrimSpace(os.Getenv("OTEL_TRACES_EXPORTER")))
	if kind == "" {
		if os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
			kind = "none"
		} else {
			kind = "otlp"
		}
	}
	switch kind {
	case "none":
		return nil, nil
	case "otlp":
	default:
		return nil, fmt.Errorf("telemetry: OTEL_TRACES_EXPORTER=%q is not supported (use otlp or none)", kind)
	}
	proto := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if proto == "" {
		proto = os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	var (
		exp sdktrace.SpanExporter
		err error
	)
	switch proto {
	case "", "http/protobuf":
		exp, err = otlptracehttp.New(ctx)
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	default:
		return nil, fmt.Errorf("telemetry: OTEL_EXPORTER_OTLP_PROTOCOL=%q is not supported", proto)
	}
	if err != nil {
		return nil, fmt.Errorf("telemetry: otlp exporter: %w", err)
	}
	return exp, nil
}
