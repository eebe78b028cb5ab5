// Package conditional gives the API's answers strong ETags and honours conditional
// requests (RFC 9110, section 13): If-None-Match on reads (304), If-Match on writes (412
// PRECONDITION_FAILED when the resource changed), checked by the gateway against the
// resource's current representation under a lock that every conditional write of that
// resource takes, on every replica (docs/api.md, "Conditional requests").
package conditional

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/valyala/fasthttp"

	"github.com/customerapi/platform/libs/apierror"
)

// CodePreconditionFailed is the code of a 412.
const CodePreconditionFailed = apierror.CodePreconditionFailed

// ETag is the strong entity tag of a representation: a digest of its bytes, so that two
// answers carry the same tag exactly when their bodies are the same.
func ETag(body []byte) string { return string(appendETag(nil, body)) }

// setETag sets the answer's ETag header from its body, without an allocation.
func setETag(resp *fasthttp.Response) {
	var buf [32]byte // a quoted base64 of 18 bytes: 26
	resp.Header.SetBytesV(fiber.HeaderETag, appendETag(buf[:0], resp.Body()))
}

// appendETag appends the ETag of body to dst (no allocation with room in dst).
func appendETag(dst, body []byte) []byte {
	sum := sha256.Sum256(body)
	dst = append(dst, '"')
	dst = base64.RawURLEncoding.AppendEncode(dst, sum[:18])
	return append(dst, '"')
}

// Matches reports whether the If-Match or If-None-Match header value lists etag ("*"
// matches any). Strong comparison (If-Match) refuses weak tags; weak comparison
// (If-None-Match) compares them without their W/.
func Matches[E string | []byte](header string, etag E, strong bool) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" {
			return true
		}
		if weak := strings.HasPrefix(t, "W/"); weak {
			if strong {
				continue
			}
			t = t[2:]
		}
		if t == string(etag) {
			return true
		}
	}
	return false
}

// Locker serialises the conditional writes of one resource across gateway replicas, with
// a PostgreSQL advisory lock of the gateway's database held for the check and the write.
type Locker struct {
	Pool *pgxpool.Pool
	// Wait bounds how long a write waits for the lock (then it is a 503).
	Wait time.Duration
}

// Lock takes the lock of key and returns its release.
func (l *Locker) Lock(ctx context.Context, key string) (func(), error) {
	wait := l.Wait
	if wait <= 0 {
		wait = 10 * time.Second
	}
	lctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	conn, err := l.Pool.Acquire(lctx)
	if err != nil {
		return nil, fmt.Errorf("conditional: acquire a connection: %w", err)
	}
	if _, err := conn.Exec(lctx, `SELECT pg_advisory_lock(hashtextextended($1, 7))`, key); err != nil {
		conn.Release()
		return nil, fmt.Errorf("conditional: lock %s: %w", key, err)
	}
	return func() {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if _, err := conn.Exec(uctx, `SELECT pg_advisory_unlock(hashtextextended($1, 7))`, key); err != nil {
			// A connection that may still hold the lock never goes back to the pool.
			_ = conn.Conn().Close(uctx)
		}
		conn.Release()
	}, nil
}

// Middleware sets ETag on every 2xx JSON answer and answers conditional requests. It
// goes after authentication, before the proxy.
type Middleware struct {
	// Target is the resource whose representation an If-Match of a write is checked
	// against (the path itself, or the parent of an action such as /publish), false when
	// the request has none.
	Target func(c *fiber.Ctx) (string, bool)
	// Current fetches a resource's representation as the caller: status and body.
	Current func(c *fiber.Ctx, path string) (int, []byte, error)
	// Tenant is the caller's tenant (the lock is per tenant and resource).
	Tenant func(c *fiber.Ctx) string
	Locker *Locker
}

// Handler is the middleware.
func (m *Middleware) Handler() fiber.Handler {
	return func(c *fiber.Ctx) error {
		method := c.Method()
		if ifMatch := c.Get(fiber.HeaderIfMatch); ifMatch != "" && isWrite(method) {
			if target, ok := m.Target(c); ok {
				release, err := m.Locker.Lock(c.UserContext(), m.Tenant(c)+" "+target)
				if err != nil {
					return apierror.Unavailable("the gateway cannot check If-Match now; retry shortly").WithCause(err).WithHeader(fiber.HeaderRetryAfter, "1")
				}
				defer release()
				if err := m.check(c, target, ifMatch); err != nil {
					return err
				}
			}
		}
		if err := c.Next(); err != nil {
			return err
		}
		resp := c.Response()
		status := resp.StatusCode()
		if status < 200 || status > 299 || !strings.HasPrefix(string(resp.Header.ContentType()), fiber.MIMEApplicationJSON) {
			return nil
		}
		if len(resp.Header.Peek(fiber.HeaderETag)) == 0 {
			setETag(resp)
		}
		etag := resp.Header.Peek(fiber.HeaderETag)
		if inm := c.Get(fiber.HeaderIfNoneMatch); inm != "" && status == fiber.StatusOK &&
			(method == fiber.MethodGet || method == fiber.MethodHead) && Matches(inm, etag, false) {
			resp.SetStatusCode(fiber.StatusNotModified)
			resp.ResetBody()
			resp.Header.Del(fiber.HeaderContentType)
		}
		return nil
	}
}

// check compares If-Match with the target's current representation.
func (m *Middleware) check(c *fiber.Ctx, target, ifMatch string) error {
	status, body, err := m.Current(c, target)
	if err != nil {
		return err
	}
	switch {
	case status == fiber.StatusNotFound:
		return apierror.NotFound("the resource does not exist (If-Match)")
	case status != fiber.StatusOK:
		return apierror.Unavailable(fmt.Sprintf("the resource's current version could not be read (status %d); retry shortly", status)).
			WithHeader(fiber.HeaderRetryAfter, "1")
	}
	current := ETag(body)
	if !Matches(ifMatch, current, true) {
		return apierror.New(fiber.StatusPreconditionFailed, CodePreconditionFailed,
			"the resource has changed since the version If-Match names; read it again, then retry with its ETag").
			WithDetails(map[string]any{"currentETag": current}).WithHeader(fiber.HeaderETag, current)
	}
	return nil
}

// isWrite reports whether a method changes state.
func isWrite(method string) bool {
	switch method {
	case fiber.MethodPatch, fiber.MethodDelete, fiber.MethodPost, fiber.MethodPut:
		return true
	}
	return false
}
