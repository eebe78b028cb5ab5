// Package tenant carries the caller's tenant from the gateway to the services.
package tenant

import (
	"log/slog"
	"strings"

	"github.com/gofiber/fiber/v2"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/customerapi/platform/libs/apierror"
	"github.com/customerapi/platform/libs/internalauth"
	"github.com/customerapi/platform/libs/telemetry"
)

// InternalPrefix starts every header that only the gateway may set; the gateway drops
// client-sent headers with this prefix.
const InternalPrefix = internalauth.Prefix

// Header carries the authenticated tenant ID from the gateway to a service.
const Header = internalauth.TenantHeader

// KeyHeader carries the ID of the API key that authenticated the request (for audit logs).
const KeyHeader = internalauth.KeyHeader

const localsKey = "tenant"

// Middleware requires the tenant header and the gateway's signature over it, and stores
// the tenant on the request. A request without them, or with a signature that is wrong or
// stale, did not come through the gateway: 401.
func Middleware(s *internalauth.Signer, log *slog.Logger) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if err := internalauth.Authenticate(c, s, log); err != nil {
			return err
		}
		t := strings.TrimSpace(c.Get(Header))
		if t == "" {
			return apierror.Unauthorized()
		}
		c.Locals(localsKey, t)
		// Every log line of the request names the tenant and key, and so does its span.
		// Copies: the span and the context may outlive the request, whose buffer the
		// header values point into.
		tenantID, keyID := strings.Clone(t), strings.Clone(strings.TrimSpace(c.Get(KeyHeader)))
		ctx := c.UserContext()
		if span := trace.SpanFromContext(ctx); span.IsRecording() {
			span.SetAttributes(attribute.String("tenant_id", tenantID), attribute.String("key_id", keyID))
		}
		c.SetUserContext(telemetry.WithCaller(ctx, tenantID, keyID))
		return c.Next()
	}
}

// From returns the tenant of the request; Middleware guarantees it is set.
func From(c *fiber.Ctx) string {
	t, _ := c.Locals(localsKey).(string)
	return t
}

// IsInternal reports whether a header name is reserved for the gateway.
func IsInternal(name string) bool {
	return len(name) >= len(InternalPrefix) && strings.EqualFold(name[:len(InternalPrefix)], InternalPrefix)
}
