package ports

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/customerapi/platform/libs/apierror"
	"github.com/customerapi/platform/services/assets/internal/domain"
)

// downloadCSP keeps a stored file harmless when a browser opens it as a page (an SVG or
// an HTML component with scripts): no scripts, no requests, a sandboxed origin.
const downloadCSP = "default-src 'none'; img-src 'self' data:; media-src 'self'; style-src 'unsafe-inline'; sandbox"

// download serves the file a signed token grants: streamed from storage, with one byte
// range when asked (Range, If-Range), ETag (the SHA-256) and If-None-Match.
func (h *Handlers) download(c *fiber.Ctx) error {
	ctx := c.UserContext()
	d, err := h.App.Resolve(ctx, c.Params("token"))
	switch {
	case errors.Is(err, domain.ErrNotFound):
		return apierror.NotFound("the asset of this link no longer exists")
	case errors.Is(err, domain.ErrLinkInvalid), errors.Is(err, domain.ErrLinkExpired):
		return apierror.Forbidden(err.Error())
	case err != nil:
		return err
	}
	f := d.File
	etag := `"` + f.SHA256 + `"`
	hdr := &c.Response().Header
	hdr.Set(fiber.HeaderETag, etag)
	hdr.Set(fiber.HeaderAcceptRanges, "bytes")
	hdr.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	hdr.Set(fiber.HeaderContentSecurityPolicy, downloadCSP)
	// Caches may keep it while the link is valid, never shared (the link is the secret).
	hdr.Set(fiber.HeaderCacheControl, fmt.Sprintf("private, max-age=%d", max(0, int(time.Until(d.Expires).Seconds()))))
	if match := c.Get(fiber.HeaderIfNoneMatch); match != "" && etagMatches(match, etag) {
		return c.SendStatus(fiber.StatusNotModified)
	}
	offset, length, status := int64(0), f.Size, fiber.StatusOK
	if rng := c.Get(fiber.HeaderRange); rng != "" && ifRange(c.Get(fiber.HeaderIfRange), etag) {
		start, end, ok, satisfiable := parseRange(rng, f.Size)
		if ok && !satisfiable {
			hdr.Set(fiber.HeaderContentRange, fmt.Sprintf("bytes */%d", f.Size))
			return apierror.New(fiber.StatusRequestedRangeNotSatisfiable, apierror.CodeValidation,
				fmt.Sprintf("the range is outside the file's %d bytes", f.Size))
		}
		if ok {
			offset, length, status = start, end-start+1, fiber.StatusPartialContent
			hdr.Set(fiber.HeaderContentRange, fmt.Sprintf("bytes %d-%d/%d", start, end, f.Size))
		}
	}
	hdr.SetContentType(f.ContentType)
	c.Status(status)
	if c.Method() == fiber.MethodHead {
		hdr.SetContentLength(int(length))
		return nil
	}
	rc, err := h.App.Storage.Open(ctx, f.Key, offset, length)
	if err != nil {
		for _, k := range []string{fiber.HeaderContentRange, fiber.HeaderETag, fiber.HeaderCacheControl} {
			hdr.Del(k)
		}
		if errors.Is(err, domain.ErrObjectNotFound) {
			return apierror.NotFound("the asset's bytes are gone")
		}
		return err
	}
	// A large file to a slow client may take longer than the usual write timeout.
	_ = c.Context().SetWriteDeadline(time.Now().Add(h.TransferTimeout))
	c.Response().SetBodyStream(rc, int(length))
	return nil
}

func etagMatches(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == etag {
			return true
		}
	}
	return false
}

// ifRange reports whether a Range applies: without If-Range, or when it names the
// current ETag (a date never matches: the ETag is the validator we offer).
func ifRange(header, etag string) bool { return header == "" || strings.TrimSpace(header) == etag }

// parseRange reads a single "bytes=" range of RFC 9110 for a file of size bytes. ok is
// false for a header to ignore (another unit, several ranges, bad syntax): the whole file
// is served then. satisfiable is false when the range lies outside the file.
func parseRange(h string, size int64) (start, end int64, ok, satisfiable bool) {
	spec, found := strings.CutPrefix(strings.TrimSpace(h), "bytes=")
	if !found || strings.Contains(spec, ",") {
		return 0, 0, false, false
	}
	first, last, found := strings.Cut(strings.TrimSpace(spec), "-")
	if !found {
		return 0, 0, false, false
	}
	if first == "" { // the last n bytes
		n, err := strconv.ParseInt(last, 10, 64)
		if err != nil || n < 0 {
			return 0, 0, false, false
		}
		if n == 0 || size == 0 {
			return 0, 0, true, false
		}
		return max(0, size-n), size - 1, true, true
	}
	s, err := strconv.ParseInt(first, 10, 64)
	if err != nil || s < 0 {
		return 0, 0, false, false
	}
	e := size - 1
	if last != "" {
		if e, err = strconv.ParseInt(last, 10, 64); err != nil || e < s {
			return 0, 0, false, false
		}
		e = min(e, size-1)
	}
	if s >= size {
		return 0, 0, true, false
	}
	return s, e, true, true
}
