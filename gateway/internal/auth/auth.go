// Package auth is the gateway's front door: it checks x-api-key against the key cache,
// refuses multi-tenant keys, applies the key's rate limit and sets the rate-limit headers.
package auth

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/customerapi/platform/gateway/internal/keys"
	"github.com/customerapi/platform/gateway/internal/observe"
	"github.com/customerapi/platform/gateway/internal/ratelimit"
	"github.com/customerapi/platform/libs/apierror"
	"github.com/customerapi/platform/libs/telemetry"
)

// HeaderAPIKey carries the caller's API key.
const HeaderAPIKey = "x-api-key"

const localsKey = "auth.key"

// Middleware authenticates every request that reaches it.
type Middleware struct {
	Cache   *keys.Cache
	Limiter ratelimit.Limiter
	// Default applies to keys without their own limit.
	Default ratelimit.Policy
	// Refusals, optional, counts the requests refused here by reason.
	Refusals *observe.Refusals
	// Family names the resource family of the request's operation (the document's tag:
	// pages, persons, ...), false for a path the document does not have; a key with
	// scopes is checked against it.
	Family func(c *fiber.Ctx) (string, bool)
	// Usage, optional, records when each key was last used.
	Usage *keys.Usage
	now   func() time.Time
}

// Handler returns the Fiber middleware.
func (m *Middleware) Handler() fiber.Handler {
	now := m.now
	if now == nil {
		now = time.Now
	}
	return func(c *fiber.Ctx) error {
		presented, ok := apiKey(c)
		if !ok {
			return m.refuse(observe.ConflictingKeys)
		}
		key := m.Cache.LookupBytes(presented)
		if key == nil {
			return m.refuse(unauthenticated(c, presented))
		}
		t := now()
		if key.Expired(t) { // on every replica at once, whatever its cache holds
			return m.refuse(observe.UnknownKey)
		}
		tenantID := ""
		if len(key.TenantIDs) == 1 {
			tenantID = key.TenantIDs[0]
		}
		// From here on the request's span and every line it logs name the key and tenant.
		ctx := c.UserContext()
		if span := trace.SpanFromContext(ctx); span.IsRecording() {
			span.SetAttributes(attribute.String("tenant_id", tenantID), attribute.String("key_id", key.ID))
		}
		c.SetUserContext(telemetry.WithCaller(ctx, tenantID, key.ID))
		if len(key.TenantIDs) != 1 {
			m.Refusals.Inc(observe.MultiTenantKey)
			return apierror.Forbidden("multi-tenant API keys are not supported; use a key issued for a single tenant")
		}
		if key.Scopes != nil && m.Family != nil {
			if family, ok := m.Family(c); ok {
				access := keys.Write
				if c.Method() == fiber.MethodGet || c.Method() == fiber.MethodHead {
					access = keys.Read
				}
				if !key.Allows(family, access) {
					m.Refusals.Inc(observe.MissingScope)
					scope := family + ":" + access
					return apierror.Forbidden("this key's scopes do not allow this operation: it needs " + scope).
						WithDetails(map[string]any{"missingScope": scope, "scopes": strings.Join(key.Scopes, " ")})
				}
			}
		}
		if m.Usage != nil {
			m.Usage.Seen(key, t)
		}
		p := m.Default
		if key.RateLimit != nil {
			p = ratelimit.Policy{Limit: key.RateLimit.Limit, Window: key.RateLimit.Window}
		}
		d := m.Limiter.Allow(c.UserContext(), key.ID, p)
		if !d.Allowed {
			m.Refusals.Inc(observe.RateLimited)
			setHeaders(c, p, d)
			return rateLimited(now(), d)
		}
		c.Locals(localsKey, key)
		err := c.Next()
		// After the upstream answered: its response replaced ours, so set the headers now.
		setHeaders(c, p, d)
		return err
	}
}

// hints say what to change for each reason of a 401, without telling which keys exist.
var hints = map[observe.Reason]string{
	observe.MissingKey:      "send your API key in the x-api-key header",
	observe.WrongHeader:     "send your API key in the x-api-key header: Authorization and query parameters are not read",
	observe.MalformedKey:    "an API key is capi_ followed by 40 letters and digits: check for quotes, white space or a truncated copy",
	observe.UnknownKey:      "this key is unknown, revoked or expired: use a key issued for your tenant",
	observe.ConflictingKeys: "send one x-api-key header: the request carries several that differ",
}

// refuse counts the refusal and answers the spec's 401, with details.reason (the
// machine-readable reason: missing_key, wrong_header, malformed_key, unknown_key,
// conflicting_keys) and details.hint.
func (m *Middleware) refuse(reason observe.Reason) error {
	m.Refusals.Inc(reason)
	e := apierror.Unauthorized()
	e.Details = map[string]any{"reason": reason.Name(), "hint": hints[reason]}
	return e
}

// unauthenticated tells why a request with no usable key was refused.
func unauthenticated(c *fiber.Ctx, presented []byte) observe.Reason {
	switch {
	case len(presented) > 0 && keys.WellFormed(string(presented)):
		return observe.UnknownKey
	case len(presented) > 0:
		return observe.MalformedKey
	case len(c.Request().Header.Peek(fiber.HeaderAuthorization)) > 0 || credentialsInQuery(c):
		return observe.WrongHeader
	default:
		return observe.MissingKey
	}
}

// keyNameSeparators are dropped from a query parameter's name before it is compared
// (api_key, api-key and apiKey read the same); built once, not per refused request.
var keyNameSeparators = strings.NewReplacer("-", "", "_", "")

// credentialsInQuery reports a query parameter that looks like a misplaced key: one named
// like a key, or any value with a key's prefix.
func credentialsInQuery(c *fiber.Ctx) bool {
	for k, v := range c.Request().URI().QueryArgs().All() {
		switch strings.ToLower(keyNameSeparators.Replace(string(k))) {
		case "apikey", "xapikey", "key", "token", "accesstoken":
			return true
		}
		if bytes.HasPrefix(v, []byte(keys.Prefix)) {
			return true
		}
	}
	return false
}

// apiKey returns the key the request presents. A key sent in several x-api-key headers
// counts only when every copy is the same: credentials that disagree (a valid key beside
// another tenant's, or beside garbage) are refused rather than resolved by order, which
// proxies and clients do not agree on. The key returned is the request's own bytes, valid
// while the request is.
func apiKey(c *fiber.Ctx) ([]byte, bool) {
	all := c.Request().Header.PeekAll(HeaderAPIKey)
	if len(all) == 0 {
		return nil, true // no key: the cache finds none and the caller gets 401
	}
	for _, v := range all[1:] {
		if string(v) != string(all[0]) {
			return nil, false
		}
	}
	return all[0], true
}

// Key returns the authenticated key of the request.
func Key(c *fiber.Ctx) *keys.Key {
	k, _ := c.Locals(localsKey).(*keys.Key)
	return k
}

func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64(math.Ceil(d.Seconds()))
}

var (
	hdrLimit     = []byte("RateLimit-Limit")
	hdrRemaining = []byte("RateLimit-Remaining")
	hdrReset     = []byte("RateLimit-Reset")
	hdrPolicy    = []byte("RateLimit-Policy")
	hdrState     = []byte("RateLimit")
)

// setHeaders writes the classic RateLimit-* headers and the IETF draft's structured
// RateLimit-Policy and RateLimit fields. It runs on every request, so it builds the values
// in one small buffer and skips fasthttp's name and value sanitising (they are ours).
func setHeaders(c *fiber.Ctx, p ratelimit.Policy, d ratelimit.Decision) {
	h := &c.Response().Header
	var buf [160]byte
	b := buf[:0]
	start := len(b)
	b = strconv.AppendInt(b, int64(d.Limit), 10)
	limit := b[start:]
	start = len(b)
	b = strconv.AppendInt(b, int64(d.Remaining), 10)
	remaining := b[start:]
	start = len(b)
	b = strconv.AppendInt(b, ceilSeconds(d.ResetAfter), 10)
	reset := b[start:]
	h.SetCanonical(hdrLimit, limit)
	h.SetCanonical(hdrRemaining, remaining)
	h.SetCanonical(hdrReset, reset)
	start = len(b)
	b = append(b, `"default";q=`...)
	b = append(b, limit...)
	b = append(b, ";w="...)
	b = strconv.AppendInt(b, max(ceilSeconds(p.Window), 1), 10)
	h.SetCanonical(hdrPolicy, b[start:])
	start = len(b)
	b = append(b, `"default";r=`...)
	b = append(b, remaining...)
	b = append(b, ";t="...)
	b = append(b, reset...)
	h.SetCanonical(hdrState, b[start:])
}

// rateLimited is the spec's 429 with its details and a Retry-After header.
func rateLimited(now time.Time, d ratelimit.Decision) *apierror.Error {
	retry := ceilSeconds(d.RetryAfter)
	if retry == 0 {
		retry = 1 // never tell a client to retry "in 0 seconds" after refusing it
	}
	e := apierror.New(fiber.StatusTooManyRequests, apierror.CodeRateLimited,
		"rate limit exceeded; retry after "+strconv.FormatInt(retry, 10)+" s")
	e.Details = map[string]any{
		"limit":      d.Limit,
		"remaining":  0,
		"resetTime":  now.Add(d.RetryAfter).UnixMilli(),
		"retryAfter": retry,
	}
	return e.WithHeader(fiber.HeaderRetryAfter, strconv.FormatInt(retry, 10))
}
