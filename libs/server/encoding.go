package server

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/customerapi/platform/libs/apierror"
)

// refuseEncodedBodies answers 415 to a request whose body declares any Content-Encoding
// but identity. Fiber's c.Body() inflates gzip, deflate, brotli and zstd bodies, chained,
// without a limit, so a few kilobytes of a compressed stream of zeros would become
// gigabytes in memory before any size check; no client of this API needs to compress a
// request of at most 1 MiB, so compressed bodies are refused instead of inflated.
//
// It reads only the Content-Encoding lines (every one of them, whatever their case), so a
// request without one costs no allocation.
func refuseEncodedBodies() fiber.Handler {
	return func(c *fiber.Ctx) error {
		for _, v := range c.Request().Header.PeekAll(fiber.HeaderContentEncoding) {
			if bad := string(v); !isIdentity(bad) {
				return apierror.New(fiber.StatusUnsupportedMediaType, apierror.CodeValidation,
					"request bodies must not be compressed (Content-Encoding "+quoteShort(bad)+"); send them with no Content-Encoding").
					WithHeader(fiber.HeaderAcceptEncoding, "identity")
			}
		}
		return c.Next()
	}
}

// isIdentity reports whether a Content-Encoding value names no encoding at all.
func isIdentity(v string) bool {
	for _, coding := range strings.Split(v, ",") {
		if c := strings.TrimSpace(coding); c != "" && !strings.EqualFold(c, "identity") {
			return false
		}
	}
	return true
}

// quoteShort quotes a client-sent value for an error message, cut to 40 bytes.
func quoteShort(s string) string {
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return `"` + strings.ToValidUTF8(s, "?") + `"`
}
