package internalauth

import (
	"log/slog"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/customerapi/platform/libs/apierror"
	"github.com/customerapi/platform/libs/requestid"
)

// Header is what Stamp needs of a request's headers: net/http's http.Header and
// fasthttp's *RequestHeader both have it.
type Header interface {
	Set(key, value string)
}

// Stamp sets the internal headers of a request to a service: the tenant and key ID (when
// not empty) and a signature over them and c.RequestID, which the caller sends as the
// request's X-Request-Id.
func Stamp(h Header, s *Signer, c Claims, at time.Time) {
	if c.TenantID != "" {
		h.Set(TenantHeader, c.TenantID)
	}
	if c.KeyID != "" {
		h.Set(KeyHeader, c.KeyID)
	}
	h.Set(SignatureHeader, s.Sign(c, at))
}

// ClaimsOf reads the claims a request's internal headers make.
func ClaimsOf(c *fiber.Ctx) Claims {
	return Claims{TenantID: c.Get(TenantHeader), KeyID: c.Get(KeyHeader), RequestID: c.Get(requestid.Header)}
}

// Authenticate checks that the request's internal headers carry a valid signature by the
// gateway. It returns nil, or logs the reason and returns the 401 to answer with.
func Authenticate(c *fiber.Ctx, s *Signer, log *slog.Logger) error {
	err := s.Verify(c.Get(SignatureHeader), ClaimsOf(c), time.Now())
	if err == nil {
		return nil
	}
	// Through the gateway this never happens unless the secrets differ or the clocks
	// drift; otherwise something reached the port without going through the gateway.
	log.WarnContext(c.UserContext(), "internal signature refused", slog.String("reason", err.Error()),
		slog.String("path", c.Path()), slog.String("remote", c.IP()))
	return apierror.Unauthorized()
}

// Middleware refuses with 401 a request whose internal headers the gateway did not sign
// (for routes without a tenant, such as signed downloads).
func Middleware(s *Signer, log *slog.Logger) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if err := Authenticate(c, s, log); err != nil {
			return err
		}
		return c.Next()
	}
}
