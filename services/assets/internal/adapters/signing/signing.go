// Package signing makes and checks the signed, expiring tokens of download URLs (a
// domain.Signer): the token names the tenant, asset, stored file and variant, so holding
// it is the whole authorisation (no API key).
package signing

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/customerapi/platform/services/assets/internal/domain"
)

// MinKeyBytes is the shortest signing key accepted.
const MinKeyBytes = 32

// maxTokenLen bounds the work done on a token before its signature is checked.
const maxTokenLen = 1024

// encoding decodes strictly: unused trailing bits must be zero, so that a token has one
// spelling (the gateway bounds concurrent downloads per link by its text).
var encoding = base64.RawURLEncoding.Strict()

// claims are a token's body: a domain.Grant, its expiry in seconds.
type claims struct {
	TenantID string `json:"t"`
	AssetID  string `json:"a"`
	FileID   string `json:"f"`
	Variant  string `json:"v"`
	ExpUnix  int64  `json:"e"`
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

// Sign returns the token for g (Expires is rounded down to the second).
func (s *Signer) Sign(g domain.Grant) string {
	b, _ := json.Marshal(claims{g.TenantID, g.AssetID, g.FileID, g.Variant, g.Expires.Unix()})
	body := base64.RawURLEncoding.EncodeToString(b)
	return body + "." + base64.RawURLEncoding.EncodeToString(s.mac(body))
}

// Verify checks the token's signature, then its expiry at now.
func (s *Signer) Verify(token string, now time.Time) (domain.Grant, error) {
	if len(token) > maxTokenLen {
		return domain.Grant{}, domain.ErrLinkInvalid
	}
	body, sig, ok := strings.Cut(token, ".")
	if !ok || body == "" {
		return domain.Grant{}, domain.ErrLinkInvalid
	}
	got, err := encoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, s.mac(body)) {
		return domain.Grant{}, domain.ErrLinkInvalid
	}
	raw, err := encoding.DecodeString(body)
	if err != nil {
		return domain.Grant{}, domain.ErrLinkInvalid
	}
	var c claims
	if err := json.Unmarshal(raw, &c); err != nil || c.TenantID == "" || c.AssetID == "" || c.FileID == "" ||
		(c.Variant != domain.VariantOriginal && c.Variant != domain.VariantPreview) {
		return domain.Grant{}, domain.ErrLinkInvalid
	}
	g := domain.Grant{TenantID: c.TenantID, AssetID: c.AssetID, FileID: c.FileID, Variant: c.Variant,
		Expires: time.Unix(c.ExpUnix, 0).UTC()}
	if !now.Before(g.Expires) {
		return g, domain.ErrLinkExpired
	}
	return g, nil
}
