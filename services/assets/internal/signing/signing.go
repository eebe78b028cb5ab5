// Package signing makes and checks the signed, expiring tokens of download URLs: the
// token names the tenant, asset, stored file and variant, so holding it is the whole
// authorisation (no API key).
package signing

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// Variants of a download.
const (
	Original = "original"
	Preview  = "preview"
)

// Errors of Verify. Both mean 403 to the caller; the detail differs.
var (
	ErrInvalid = errors.New("the download link is invalid")
	ErrExpired = errors.New("the download link has expired")
)

// MinKeyBytes is the shortest signing key accepted.
const MinKeyBytes = 32

// maxTokenLen bounds the work done on a token before its signature is checked.
const maxTokenLen = 1024

// encoding decodes strictly: unused trailing bits must be zero, so that a token has one
// spelling (the gateway bounds concurrent downloads per link by its text).
var encoding = base64.RawURLEncoding.Strict()

// Claims are what a token grants: one variant of one stored file, until Expires.
type Claims struct {
	TenantID string    `json:"t"`
	AssetID  string    `json:"a"`
	FileID   string    `json:"f"`
	Variant  string    `json:"v"`
	Expires  time.Time `json:"-"`
	ExpUnix  int64     `json:"e"`
}

// Signer signs and verifies tokens with a key derived from the service secret.
type Signer struct {
	key []byte
}

// New derives the signer's key from secret (at least MinKeyBytes), so the same secret
// can serve other purposes elsewhere without a token of one being valid for another.
func New(secret []byte) (*Signer, error) {
	if len(secret) < MinKeyBytes {
		return nil, errors.New("signing: the key must hold at least 32 bytes")
	}
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("customer-api assets download-url v1"))
	return &Signer{key: m.Sum(nil)}, nil
}

func (s *Signer) mac(body string) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(body))
	return m.Sum(nil)
}

// Sign returns the token for c (Expires is rounded down to the second).
func (s *Signer) Sign(c Claims) string {
	c.ExpUnix = c.Expires.Unix()
	b, _ := json.Marshal(c)
	body := base64.RawURLEncoding.EncodeToString(b)
	return body + "." + base64.RawURLEncoding.EncodeToString(s.mac(body))
}

// Verify checks the token's signature, then its expiry at now.
func (s *Signer) Verify(token string, now time.Time) (Claims, error) {
	if len(token) > maxTokenLen {
		return Claims{}, ErrInvalid
	}
	body, sig, ok := strings.Cut(token, ".")
	if !ok || body == "" {
		return Claims{}, ErrInvalid
	}
	got, err := encoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, s.mac(body)) {
		return Claims{}, ErrInvalid
	}
	raw, err := encoding.DecodeString(body)
	if err != nil {
		return Claims{}, ErrInvalid
	}
	var c Claims
	if err := json.Unmarshal(raw, &c); err != nil || c.TenantID == "" || c.AssetID == "" || c.FileID == "" ||
		(c.Variant != Original && c.Variant != Preview) {
		return Claims{}, ErrInvalid
	}
	c.Expires = time.Unix(c.ExpUnix, 0).UTC()
	if !now.Before(c.Expires) {
		return c, ErrExpired
	}
	return c, nil
}
