// Package requestid assigns, validates and carries the request correlation ID.
package requestid

import (
	"context"

	"github.com/gofiber/fiber/v2"

	"github.com/customerapi/platform/libs/ids"
)

// Header is the HTTP header that carries the request ID in both directions.
const Header = "X-Request-Id"

// MaxLen bounds a client-sent request ID; longer ones are replaced.
const MaxLen = 128

type ctxKey struct{}

const localsKey = "requestid"

// Sane reports whether a client-sent request ID may be echoed: 1..MaxLen characters
// from [A-Za-z0-9._:-], so it is safe in headers and logs.
func Sane(id string) bool {
	if len(id) == 0 || len(id) > MaxLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '.', c == '_', c == '-', c == ':':
		default:
			return false
		}
	}
	return true
}

// New returns a fresh request ID.
func New() string { return ids.New("req") }

// Middleware takes the request ID from the request header when it is sane, or makes a new
// one, stores it on the Fiber context and the user context, and sets the response header.
func Middleware() fiber.Handler {
	return func(c *fiber.Ctx) error {
		id := Ensure(c)
		c.SetUserContext(With(c.UserContext(), id))
		return c.Next()
	}
}

var headerKey = []byte(Header)

// Ensure returns the request ID of c, assigning one (from a sane request header or new)
// and setting the response header when none has been assigned yet.
func Ensure(c *fiber.Ctx) string {
	if id, ok := c.Locals(localsKey).(string); ok && id != "" {
		return id
	}
	id := c.Get(Header)
	if !Sane(id) {
		id = New()
	}
	c.Locals(localsKey, id)
	Stamp(c, id)
	return id
}

// Stamp sets the response header to id (again, after the response was reset or replaced).
func Stamp(c *fiber.Ctx, id string) {
	// SetCanonical: the name is canonical and the value sane, so skip fasthttp's checks.
	c.Response().Header.SetCanonical(headerKey, []byte(id))
}

// With returns a context carrying the request ID.
func With(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, ctxKey{}, id)
}

// From returns the request ID carried by ctx, or "".
func From(ctx context.Context) string {
	id, _ := ctx.Value(ctxKey{}).(string)
	return id
}
