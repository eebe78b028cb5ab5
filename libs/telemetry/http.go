package telemetry

import (
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/customerapi/platform/libs/apierror"
)

// HeaderCarrier adapts Fiber request headers for trace-context extraction.
type HeaderCarrier struct{ C *fiber.Ctx }

// Get returns a request header.
func (h HeaderCarrier) Get(key string) string { return h.C.Get(key) }

// Set sets a response header (unused by extraction).
func (h HeaderCarrier) Set(key, value string) { h.C.Set(key, value) }

// Keys returns the request header names.
func (h HeaderCarrier) Keys() []string {
	var keys []string
	for k := range h.C.Request().Header.All() {
		keys = append(keys, string(k))
	}
	return keys
}

var _ propagation.TextMapCarrier = HeaderCarrier{}

// Middleware is the observability middleware of every HTTP server: it continues the
// caller's trace (traceparent) in a server span, records the request metrics and writes
// one access log line per request. Errors from later handlers are rendered by render
// first, so the status recorded is the status sent.
//
// nolint: contextcheck // c.UserContext() is the request's own context, not a new one.
func Middleware(tracer trace.Tracer, m *HTTPMetrics, log *slog.Logger, render apierror.Renderer) fiber.Handler {
	var credentials routeCredentials
	return func(c *fiber.Ctx) error {
		start := time.Now()
		m.inflight.Inc()
		defer m.inflight.Dec()

		// Fiber's method and path alias the connection's buffers, which the next request
		// overwrites: what outlives the request (metric labels, spans exported later) gets
		// a constant method name and a copy of the path.
		method := MethodLabel(c.Method())
		ctx := Propagator.Extract(c.UserContext(), HeaderCarrier{c})
		var span trace.Span
		if u, ok := tracer.(unsampledTracer); ok {
			ctx, span = u.startServer(ctx) // nothing samples: the IDs without the SDK's work
		} else {
			ctx, span = tracer.Start(ctx, method, spanStart(method)...)
		}
		recording := span.IsRecording()
		defer span.End()
		c.SetUserContext(ctx)

		err := c.Next()
		if err != nil {
			if rerr := render.Write(c, err); rerr != nil {
				return rerr
			}
		}
		status := c.Response().StatusCode()
		route := ""
		if m.RouteName != nil {
			route = m.RouteName(c)
		}
		if route == "" {
			route = c.Route().Path
		}
		if route == "" || route == "/" && c.Path() != "/" {
			route = "unmatched"
		}
		// A credential in the path (a signed download's token) is redacted where the
		// route names its segment as one: the path is for correlating, not for replaying.
		path := credentials.redact(c.Path(), route)
		if r := c.Route().Path; path == c.Path() && r != route {
			path = credentials.redact(path, r) // RouteName's template may not name the parameter
		}
		if recording { // a span that records nothing needs no name or attributes built
			span.SetName(method + " " + route)
			span.SetAttributes(semconv.URLPath(strings.Clone(path)), semconv.HTTPRoute(route), semconv.HTTPResponseStatusCode(status))
		}
		if status >= 500 {
			span.SetStatus(codes.Error, strconv.Itoa(status))
		}
		elapsed := time.Since(start)
		s := m.series(method, route, status)
		s.requests.Inc()
		s.duration.Observe(elapsed.Seconds())
		// The handlers' context: it carries what they learnt (the caller's tenant and key).
		if ctx := c.UserContext(); log.Enabled(ctx, slog.LevelInfo) {
			log.LogAttrs(ctx, slog.LevelInfo, "request",
				slog.String("method", method), slog.String("path", path),
				slog.String("route", route), slog.Int("status", status),
				slog.Float64("duration_ms", float64(elapsed.Microseconds())/1000))
		}
		return nil
	}
}

// spanStarts are the options of a server span, by method label: built once, not per
// request.
var spanStarts = func() map[string][]trace.SpanStartOption {
	out := map[string][]trace.SpanStartOption{}
	for _, m := range []string{fiber.MethodGet, fiber.MethodHead, fiber.MethodPost, fiber.MethodPut,
		fiber.MethodPatch, fiber.MethodDelete, fiber.MethodOptions, fiber.MethodConnect, fiber.MethodTrace, "OTHER"} {
		out[m] = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(semconv.HTTPRequestMethodKey.String(m))}
	}
	return out
}()

func spanStart(method string) []trace.SpanStartOption { return spanStarts[method] }

// MethodLabel is a request method as a constant string, for labels and attributes that
// outlive the request: the standard methods by name, anything else "OTHER" (which also
// bounds the label's values).
func MethodLabel(m string) string {
	switch m {
	case fiber.MethodGet:
		return fiber.MethodGet
	case fiber.MethodHead:
		return fiber.MethodHead
	case fiber.MethodPost:
		return fiber.MethodPost
	case fiber.MethodPut:
		return fiber.MethodPut
	case fiber.MethodPatch:
		return fiber.MethodPatch
	case fiber.MethodDelete:
		return fiber.MethodDelete
	case fiber.MethodOptions:
		return fiber.MethodOptions
	case fiber.MethodConnect:
		return fiber.MethodConnect
	case fiber.MethodTrace:
		return fiber.MethodTrace
	}
	return "OTHER"
}
