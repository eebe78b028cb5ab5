package idempotency

import (
	"context"
	"crypto/sha256"
	"errors"
	"log/slog"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/customerapi/platform/gateway/internal/auth"
	"github.com/customerapi/platform/libs/apierror"
	"github.com/customerapi/platform/libs/bodylimit"
)

// Header is the request header that names a request for its retries.
const Header = "Idempotency-Key"

// ReplayedHeader marks an answer replayed from the store.
const ReplayedHeader = "Idempotent-Replayed"

// MaxKeyLength bounds a key (the document's limit).
const MaxKeyLength = 255

// Defaults of Middleware.
const (
	DefaultTTL   = 24 * time.Hour
	DefaultLease = time.Minute
)

// storedHeaders are the answer's headers a replay repeats; the others (X-Request-Id,
// the rate limit's) belong to each request.
var storedHeaders = []string{fiber.HeaderContentType, fiber.HeaderLocation, fiber.HeaderETag, fiber.HeaderLastModified}

// Middleware runs POST requests that carry an Idempotency-Key at most once per tenant and
// key: the first runs, a retry of the same request (method, path, query, content type
// and body; an upload's body streams and is not compared) while it runs is a 409, after
// it the stored answer with Idempotent-Replayed: true, and another request with the key a
// 409. It goes after authentication (it needs the tenant) and before the proxy.
type Middleware struct {
	Store *Store
	Log   *slog.Logger
	// TTL is how long an answer is kept (DefaultTTL); Lease how long a request counts as
	// in flight before a retry may run it again (DefaultLease; longer than any upstream
	// time-out).
	TTL, Lease time.Duration
	// Streams reports whether a request's body streams through (uploads): its body is
	// not part of the fingerprint.
	Streams func(method, path string) bool
}

// Handler is the middleware.
func (m *Middleware) Handler() fiber.Handler {
	ttl, lease := m.TTL, m.Lease
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	if lease <= 0 {
		lease = DefaultLease
	}
	return func(c *fiber.Ctx) error {
		raw := c.Request().Header.Peek(Header)
		if c.Method() != fiber.MethodPost || raw == nil {
			return c.Next()
		}
		key := string(raw)
		if err := validKey(key); err != nil {
			return err
		}
		k := auth.Key(c)
		if k == nil {
			return c.Next() // not authenticated: the proxy refuses it
		}
		tenant := k.TenantIDs[0]
		fp, err := m.fingerprint(c)
		if err != nil {
			return err
		}
		ctx := c.UserContext()
		outcome, answer, err := m.Store.Begin(ctx, tenant, key, fp, lease, ttl)
		if err != nil {
			m.Log.ErrorContext(ctx, "idempotency: claim the key", "err", err)
			return apierror.Unavailable("the gateway cannot check the Idempotency-Key now; retry shortly").WithHeader("Retry-After", "1")
		}
		switch outcome {
		case Mismatch:
			return apierror.New(fiber.StatusConflict, apierror.CodeConflict,
				"this Idempotency-Key was used for a different request (method, path, query or body); use a new key for a new request").
				WithDetails(map[string]any{"reason": "idempotency_key_reused"})
		case InFlight:
			return apierror.New(fiber.StatusConflict, apierror.CodeConflict,
				"a request with this Idempotency-Key is in progress; retry after it has been answered").
				WithDetails(map[string]any{"reason": "idempotency_key_in_flight"}).WithHeader("Retry-After", "1")
		case Replay:
			replay(c, answer)
			return nil
		}
		err = c.Next()
		// The store's writes must happen even when the client has gone.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		status := c.Response().StatusCode()
		switch {
		case err != nil && timedOut(err):
			// The service may still do the write: the key stays in flight until its lease
			// ends, so a retry meanwhile is told to wait rather than run it twice.
		case err != nil || status == fiber.StatusTooManyRequests || status == fiber.StatusServiceUnavailable:
			// Refused before it ran (the gateway's own errors, a service's 503 or 429).
			if rerr := m.Store.Release(sctx, tenant, key); rerr != nil {
				m.Log.ErrorContext(ctx, "idempotency: release the key", "err", rerr)
			}
		default:
			if serr := m.Store.Complete(sctx, tenant, key, stored(c.Response())); serr != nil {
				// The answer still goes out; a retry after the lease would run the request again.
				m.Log.ErrorContext(ctx, "idempotency: store the answer", "err", serr)
			}
		}
		return err
	}
}

// fingerprint is a digest of what makes two requests the same request.
func (m *Middleware) fingerprint(c *fiber.Ctx) ([]byte, error) {
	req := c.Request()
	h := sha256.New()
	for _, part := range [][]byte{req.Header.Method(), req.URI().PathOriginal(), req.URI().QueryString(), req.Header.ContentType()} {
		h.Write(part)
		h.Write([]byte{0})
	}
	if m.Streams == nil || !m.Streams(c.Method(), c.Path()) {
		if err := bodylimit.Buffer(req); err != nil {
			return nil, err
		}
		h.Write(req.Body())
	}
	return h.Sum(nil), nil
}

// validKey refuses a key that is empty, too long or not printable ASCII.
func validKey(key string) error {
	ok := key != "" && len(key) <= MaxKeyLength
	for i := 0; ok && i < len(key); i++ {
		ok = key[i] > ' ' && key[i] < 0x7f
	}
	if ok {
		return nil
	}
	return apierror.Validation(apierror.FieldHeader, apierror.Issue{Code: "invalid_string", Path: []any{Header},
		Message: "Idempotency-Key must be 1 to 255 printable ASCII characters without spaces"})
}

// stored is what is kept of an answer.
func stored(resp *fasthttp.Response) Answer {
	a := Answer{Status: resp.StatusCode(), Headers: map[string]string{}, Body: append([]byte(nil), resp.Body()...)}
	for _, name := range storedHeaders {
		if v := resp.Header.Peek(name); len(v) > 0 {
			a.Headers[name] = string(v)
		}
	}
	return a
}

// replay writes a stored answer, marked as replayed.
func replay(c *fiber.Ctx, a Answer) {
	c.Status(a.Status)
	for name, v := range a.Headers {
		c.Set(name, v)
	}
	c.Set(ReplayedHeader, "true")
	c.Response().SetBodyRaw(a.Body)
}

// timedOut reports whether the request failed by the service not answering in time
// (the proxy's 503 wraps the cause).
func timedOut(err error) bool { return errors.Is(err, fasthttp.ErrTimeout) }
