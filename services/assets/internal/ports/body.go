package ports

import (
	"bytes"
	"io"

	"github.com/gofiber/fiber/v2"

	"github.com/customerapi/platform/libs/apierror"
)

// The service streams request bodies (uploads must not be buffered). The document
// middleware reads the JSON bodies it judges (trash, restore) no further than 1 MiB; a
// route with no body to judge (DELETE) takes what is sent through bufferJSON, which reads
// at most 1 MiB too.

func tooBig(limit string) *apierror.Error {
	return apierror.Validation(apierror.FieldBody, apierror.Issue{Code: "too_big", Path: []any{},
		Message: "request body exceeds the limit of " + limit})
}

// bufferJSON replaces a streamed body of at most 1 MiB by its bytes; a larger one is a
// 400 without reading it all.
func bufferJSON(c *fiber.Ctx) error {
	req := c.Request()
	if !req.IsBodyStream() {
		return c.Next()
	}
	if req.Header.ContentLength() > apierror.MaxBodyBytes {
		return tooBig("1 MiB")
	}
	b, err := io.ReadAll(io.LimitReader(req.BodyStream(), apierror.MaxBodyBytes+1))
	if err != nil {
		return apierror.Validation(apierror.FieldBody, apierror.Issue{Code: "invalid_json", Path: []any{},
			Message: "the request body could not be read"})
	}
	if len(b) > apierror.MaxBodyBytes {
		return tooBig("1 MiB")
	}
	req.SetBodyRaw(b)
	return c.Next()
}

// bodyReader returns the request body as a stream, whether or not the server streams it.
func bodyReader(c *fiber.Ctx) io.Reader {
	if r := c.Context().RequestBodyStream(); r != nil {
		return r
	}
	return bytes.NewReader(c.Body())
}
