// Package admin serves the gateway's admin API (its own listener): issuing, listing and
// revoking API keys, behind a bearer token.
package admin

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/customerapi/platform/gateway/internal/keys"
	"github.com/customerapi/platform/libs/apierror"
	"github.com/customerapi/platform/libs/ids"
	"github.com/customerapi/platform/libs/pagination"
	"github.com/customerapi/platform/libs/request"
	"github.com/customerapi/platform/libs/timestamp"
)

// Handlers serve the admin API.
type Handlers struct {
	Store     *keys.Store
	Cache     *keys.Cache
	Hasher    *keys.Hasher
	Validator *request.Validator
	Cursors   *pagination.Codec
	// Token is the admin bearer token.
	Token string
}

// Register mounts the admin routes on app.
func (h *Handlers) Register(app fiber.Router) {
	g := app.Group("/admin/v0", h.requireToken)
	g.Post("/keys", h.create)
	g.Get("/keys", h.list)
	g.Get("/keys/:keyId", h.get)
	g.Delete("/keys/:keyId", h.revoke)
	g.Post("/keys/:keyId/rotate", h.rotate)
}

func (h *Handlers) requireToken(c *fiber.Ctx) error {
	got, ok := strings.CutPrefix(c.Get(fiber.HeaderAuthorization), "Bearer ")
	// Compare digests so the comparison takes the same time whatever the lengths.
	a, b := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(h.Token))
	if !ok || subtle.ConstantTimeCompare(a[:], b[:]) != 1 {
		return apierror.Unauthorized()
	}
	return c.Next()
}

type rateLimitBody struct {
	Limit    int64 `json:"limit" validate:"required,min=1,max=1000000"`
	WindowMs int64 `json:"windowMs" validate:"required,min=1,max=86400000"`
}

type createBody struct {
	TenantIDs []string       `json:"tenantIds" validate:"required,min=1,max=100,unique,dive,tenantid"`
	RateLimit *rateLimitBody `json:"rateLimit"`
	Name      *string        `json:"name" validate:"omitempty,min=1,max=200"`
	// ExpiresAt is when the key stops working (RFC 3339, in the future, within MaxKeyLifetime).
	ExpiresAt *string `json:"expiresAt" validate:"omitempty,max=40"`
	// Scopes limit the key ("pages:read", "*:write", ...); absent: every operation.
	Scopes []string `json:"scopes" validate:"omitempty,min=1,max=12,unique,dive,scope"`
}

type rotateBody struct {
	// GracePeriodSeconds is how long the old key keeps working (default 24 h, at most 30 days).
	GracePeriodSeconds *int64 `json:"gracePeriodSeconds" validate:"omitempty,min=0,max=2592000"`
}

// MaxKeyLifetime bounds expiresAt.
const MaxKeyLifetime = 10 * 365 * 24 * time.Hour

// DefaultGracePeriod is how long a rotated key keeps working by default.
const DefaultGracePeriod = 24 * time.Hour

// keyView is a key as the admin API shows it.
type keyView struct {
	KeyID     string         `json:"keyId"`
	Key       string         `json:"key,omitempty"`
	Prefix    string         `json:"prefix"`
	Name      *string        `json:"name"`
	TenantIDs []string       `json:"tenantIds"`
	RateLimit *rateLimitBody `json:"rateLimit"`
	CreatedAt string         `json:"createdAt"`
	RevokedAt *string        `json:"revokedAt"`
	ExpiresAt *string        `json:"expiresAt"`
	// Scopes are the key's scopes; null: every operation.
	Scopes      []string `json:"scopes"`
	RotatedFrom *string  `json:"rotatedFrom"`
	// LastUsedAt is when a gateway last saw the key (to within KEY_USAGE_FLUSH_INTERVAL).
	LastUsedAt *string `json:"lastUsedAt"`
	// Warnings say what the key cannot do as issued (absent when nothing).
	Warnings []string `json:"warnings,omitempty"`
}

// multiTenantWarning is the warning of a key with several tenant IDs, which the API
// refuses with 403 on every request: it cannot tell which tenant a call is for.
const multiTenantWarning = "this key names more than one tenant: every API request with it is refused with 403; issue one key per tenant"

func view(k keys.Key) keyView {
	v := keyView{KeyID: k.ID, Prefix: k.Prefix, Name: k.Name, TenantIDs: k.TenantIDs,
		CreatedAt: timestamp.Format(k.CreatedAt), RevokedAt: timestamp.FormatPtr(k.RevokedAt),
		ExpiresAt: timestamp.FormatPtr(k.ExpiresAt), Scopes: k.Scopes, RotatedFrom: k.RotatedFrom,
		LastUsedAt: timestamp.FormatPtr(k.LastUsedAt)}
	if k.RateLimit != nil {
		v.RateLimit = &rateLimitBody{Limit: int64(k.RateLimit.Limit), WindowMs: k.RateLimit.Window.Milliseconds()}
	}
	if len(k.TenantIDs) > 1 {
		v.Warnings = []string{multiTenantWarning}
	}
	return v
}

func (h *Handlers) create(c *fiber.Ctx) error {
	var body createBody
	if err := h.Validator.Body(c, &body); err != nil {
		return err
	}
	plain, err := keys.Generate()
	if err != nil {
		return apierror.Internal(err)
	}
	k := keys.Key{ID: ids.New("key"), Hash: h.Hasher.Hash(plain), Prefix: plain[:keys.DisplayLen],
		Name: body.Name, TenantIDs: body.TenantIDs, Scopes: body.Scopes}
	if body.ExpiresAt != nil {
		t, err := time.Parse(time.RFC3339Nano, *body.ExpiresAt)
		now := time.Now()
		if err != nil || !t.After(now) || t.Sub(now) > MaxKeyLifetime {
			return apierror.Validation(apierror.FieldBody, apierror.Issue{Code: "invalid_date", Path: []any{"expiresAt"},
				Message: "expiresAt must be an RFC 3339 time in the future, at most 10 years ahead"})
		}
		k.ExpiresAt = &t
	}
	if body.RateLimit != nil {
		k.RateLimit = &keys.RateLimit{Limit: int(body.RateLimit.Limit), Window: time.Duration(body.RateLimit.WindowMs) * time.Millisecond}
	}
	stored, err := h.Store.Insert(c.UserContext(), k)
	if err != nil {
		return apierror.Internal(err)
	}
	h.Cache.Put(stored) // usable at once on this replica; others reload on the notification
	v := view(stored)
	v.Key = plain // shown this once only
	return c.Status(fiber.StatusCreated).JSON(v)
}

// rotate issues a successor of a key (a new secret, the same tenants, scopes, name and
// rate limit) and lets the old key work for the grace period, then not at all: its
// expiry is enforced by every replica at each request.
func (h *Handlers) rotate(c *fiber.Ctx) error {
	var body rotateBody
	if err := h.Validator.Body(c, &body); err != nil {
		return err
	}
	grace := DefaultGracePeriod
	if body.GracePeriodSeconds != nil {
		grace = time.Duration(*body.GracePeriodSeconds) * time.Second
	}
	plain, err := keys.Generate()
	if err != nil {
		return apierror.Internal(err)
	}
	next := keys.Key{ID: ids.New("key"), Hash: h.Hasher.Hash(plain), Prefix: plain[:keys.DisplayLen]}
	created, old, err := h.Store.Rotate(c.UserContext(), c.Params("keyId"), next, grace)
	switch {
	case errors.Is(err, keys.ErrNotFound):
		return apierror.NotFound("no such key")
	case errors.Is(err, keys.ErrNotActive):
		return apierror.Conflict("the key is revoked or expired: issue a new key instead")
	case err != nil:
		return apierror.Internal(err)
	}
	h.Cache.Put(created)
	h.Cache.Put(old) // its new expiry, at once on this replica
	v := view(created)
	v.Key = plain // shown this once only
	return c.Status(fiber.StatusCreated).JSON(v)
}

func (h *Handlers) get(c *fiber.Ctx) error {
	k, err := h.Store.Get(c.UserContext(), c.Params("keyId"))
	if errors.Is(err, keys.ErrNotFound) {
		return apierror.NotFound("no such key")
	}
	if err != nil {
		return apierror.Internal(err)
	}
	return c.JSON(view(k))
}

func (h *Handlers) list(c *fiber.Ctx) error {
	q := request.NewQuery(c)
	pagination.CheckLimit(q)
	p := h.Cursors.Parse(q, pagination.Scope("admin.keys"))
	if err := q.Err(); err != nil {
		return err
	}
	after := ""
	if len(p.After) == 1 {
		after = p.After[0]
	}
	ks, err := h.Store.List(c.UserContext(), after, p.Limit+1)
	if err != nil {
		return apierror.Internal(err)
	}
	views := make([]keyView, len(ks))
	for i, k := range ks {
		views[i] = view(k)
	}
	return c.JSON(pagination.Build(h.Cursors, p, views, nil, func(v keyView) []string { return []string{v.KeyID} }))
}

func (h *Handlers) revoke(c *fiber.Ctx) error {
	k, err := h.Store.Revoke(c.UserContext(), c.Params("keyId"))
	if errors.Is(err, keys.ErrNotFound) {
		return apierror.NotFound("no such key")
	}
	if err != nil {
		return apierror.Internal(err)
	}
	h.Cache.Remove(k.Hash)
	return c.SendStatus(fiber.StatusNoContent)
}

// ValidTenantID reports whether s is an acceptable tenant ID: 1 to 64 characters from
// letters, digits, '-', '_' and '.', starting with a letter or digit.
func ValidTenantID(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || (c != '-' && c != '_' && c != '.')) {
			return false
		}
	}
	return true
}
