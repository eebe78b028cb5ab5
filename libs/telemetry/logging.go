package telemetry

import (
	"context"
	"io"
	"log/slog"
	"strings"

	"go.opentelemetry.io/otel/trace"

	"github.com/customerapi/platform/libs/requestid"
)

// NewLogger returns a JSON logger for the named service at the given level ("debug",
// "info", "warn", "error"); every record logged with a context carries that context's
// request ID, trace and span IDs, and the tenant and API key of the request (WithCaller).
func NewLogger(w io.Writer, service, level string) *slog.Logger {
	h := slog.NewJSONHandler(w, &slog.HandlerOptions{Level: ParseLevel(level)})
	return slog.New(contextHandler{h}).With(slog.String("service", service))
}

// ParseLevel maps a level name to a slog level; unknown names give info.
func ParseLevel(s string) slog.Level {
	switch strings.ToLower(s) {
	case "debug":
		return slog.LevelDebug
	case "warn", "warning":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	}
	return slog.LevelInfo
}

type callerKey struct{}

// caller is who a request acts for: the tenant and the API key that authenticated it.
type caller struct{ tenantID, keyID string }

// WithCaller returns ctx carrying the request's tenant and API key ID: every line logged
// with it carries them as tenant_id and key_id (empty ones are left out). The gateway sets
// it once it has resolved the key, a service once it has verified the gateway's headers.
// Metrics have no tenant label (the number of tenants is unbounded); a question about one
// tenant is answered from these log lines and from the spans' tenant_id attribute.
func WithCaller(ctx context.Context, tenantID, keyID string) context.Context {
	return context.WithValue(ctx, callerKey{}, caller{tenantID: tenantID, keyID: keyID})
}

// CallerFrom returns the tenant and key ID WithCaller put in ctx.
func CallerFrom(ctx context.Context) (tenantID, keyID string) {
	c, _ := ctx.Value(callerKey{}).(caller)
	return c.tenantID, c.keyID
}

type contextHandler struct{ slog.Handler }

func (h contextHandler) Handle(ctx context.Context, r slog.Record) error {
	if id := requestid.From(ctx); id != "" {
		r.AddAttrs(slog.String("request_id", id))
	}
	if c, ok := ctx.Value(callerKey{}).(caller); ok {
		if c.tenantID != "" {
			r.AddAttrs(slog.String("tenant_id", c.tenantID))
		}
		if c.keyID != "" {
			r.AddAttrs(slog.String("key_id", c.keyID))
		}
	}
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	return h.Handler.Handle(ctx, r)
}

func (h contextHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return contextHandler{h.Handler.WithAttrs(as)}
}

func (h contextHandler) WithGroup(name string) slog.Handler {
	return contextHandler{h.Handler.WithGroup(name)}
}
