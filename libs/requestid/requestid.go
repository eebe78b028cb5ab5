// Package requestid assigns, validates and carries the request correlation ID.
package requestid

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
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

// New returns a fresh request ID: a TypeID ("req_" and 26 base32 characters of a
// UUIDv7: the millisecond, then 12 random bits fixed per process and 62 bits counting up
// from a random start), unique within the process and, by the random parts, across
// replicas. It is a correlation ID, not a secret (a client may choose its own). One
// atomic add per ID, no lock, one allocation.
func New() string {
	ms := uint64(time.Now().UnixMilli())
	n := seq.Add(1)
	hi := ms<<16 | 0x7000 | randA
	lo := 0x8000000000000000 | n&(1<<62-1)
	var b [len(prefix) + 26]byte
	return string(appendBase32(append(b[:0], prefix...), hi, lo))
}

const prefix = "req_"

var (
	seq   atomic.Uint64
	randA uint64 // 12 bits
)

func init() {
	var b [10]byte
	_, _ = rand.Read(b[:])
	randA = uint64(binary.BigEndian.Uint16(b[:2])) & 0x0fff
	seq.Store(binary.BigEndian.Uint64(b[2:]) & (1<<61 - 1)) // the lower half: 2^61 IDs before it wraps
}

// alphabet is TypeID's base32 (Crockford's, lower case).
const alphabet = "0123456789abcdefghjkmnpqrstvwxyz"

// appendBase32 appends the 128-bit hi:lo as TypeID's 26 characters: 3 bits, then 5 at a
// time, most significant first.
func appendBase32(dst []byte, hi, lo uint64) []byte {
	for j := 0; j < 26; j++ {
		shift := uint(125 - 5*j)
		var v uint64
		switch {
		case shift >= 64:
			v = hi >> (shift - 64)
		case shift > 59: // the five bits straddle hi and lo
			v = hi<<(64-shift) | lo>>shift
		default:
			v = lo >> shift
		}
		dst = append(dst, alphabet[v&31])
	}
	return dst
}

// Middleware takes the request ID from the request header when it is sane, or makes a new
// one, stores it on the Fiber context and the user context, and sets the response header.
//
// nolint: contextcheck // c.UserContext() is the request's own context, not a new one.
func Middleware() fiber.Handler {
	return func(c *fiber.Ctx) error {
		Ensure(c)
		// The pointer Ensure stored: the context carries the same ID without another copy.
		p, _ := c.Locals(localsKey).(*string)
		c.SetUserContext(context.WithValue(c.UserContext(), ctxKey{}, p))
		return c.Next()
	}
}

var headerKey = []byte(Header)

// Ensure returns the request ID of c, assigning one (from a sane request header or new)
// and setting the response header when none has been assigned yet.
func Ensure(c *fiber.Ctx) string {
	if p, ok := c.Locals(localsKey).(*string); ok && *p != "" {
		return *p
	}
	id := c.Get(Header)
	if !Sane(id) {
		id = New()
	}
	c.Locals(localsKey, &id)
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
	switch v := ctx.Value(ctxKey{}).(type) {
	case string:
		return v
	case *string:
		if v != nil {
			return *v
		}
	}
	return ""
}
