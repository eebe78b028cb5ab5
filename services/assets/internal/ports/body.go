package ports

import (
	"bytes"
	"io"

	"github.com/gofiber/fiber/v2"

	"github.com/customerapi/platform/libs/bodylimit"
)

// The service streams request bodies (uploads must not be buffered). The document
// middleware reads the JSON bodies it judges (trash, restore) no further than 1 MiB; a
// route with no body to judge (DELETE) takes what is sent through bufferJSON
// (bodylimit.Buffer), which keeps at most 1 MiB too.

// bufferJSON replaces a streamed body of at most 1 MiB by its bytes; a larger one is a
// 400 without reading more than bodylimit.HardLimit of it.
func bufferJSON(c *fiber.Ctx) error {
	if err := bodylimit.Buffer(c.Request()); err != nil {
		return err
	}
	return c.Next()
}

// bodyReader returns the request body as a stream, whether or not the server streams it.
func bodyReader(c *fiber.Ctx) io.Reader {
	if r := c.Context().RequestBodyStream(); r != nil {
		return r
	}
	return bytes.NewReader(c.Body())
}
