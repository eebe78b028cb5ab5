// Package keys issues, stores, caches and verifies API keys.
package keys

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"math/big"
	"slices"
	"strings"
	"time"
)

// Prefix starts every API key, so keys are recognisable in code and in secret scanners.
const Prefix = "capi_"

// secretLen is the number of base62 characters after the prefix (~238 bits).
const secretLen = 40

// DisplayLen is how many leading characters of a key are kept for display.
const DisplayLen = len(Prefix) + 6

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// RateLimit is a key's own limit: a burst of Limit requests, refilled smoothly at Limit
// per Window.
type RateLimit struct {
	Limit  int
	Window time.Duration
}

// Key is an API key as stored (never with its plaintext).
type Key struct {
	ID        string
	Hash      [32]byte
	Prefix    string
	Name      *string
	TenantIDs []string
	// RateLimit is nil when the key uses the gateway's default.
	RateLimit *RateLimit
	CreatedAt time.Time
	RevokedAt *time.Time
	// ExpiresAt, when set, is when the key stops working (a rotated key's grace end).
	ExpiresAt *time.Time
	// Scopes limit what the key may do (nil: everything); see Allows.
	Scopes []string
	// RotatedFrom is the key this one replaced by rotation.
	RotatedFrom *string
	// LastUsedAt is when a gateway last saw the key (to within UsageFlushEvery; the
	// admin API's reads only).
	LastUsedAt *time.Time
}

// Expired reports whether the key no longer works at now.
func (k *Key) Expired(now time.Time) bool { return k.ExpiresAt != nil && !now.Before(*k.ExpiresAt) }

// Access levels of a scope: write includes read.
const (
	Read  = "read"
	Write = "write"
)

// Families are the resource families a scope can name (the document's tags), and "*".
var Families = []string{"topics", "pages", "persons", "assets", "webhooks"}

// ValidScope reports whether s is "<family>:<read|write>" with a family of Families or *.
func ValidScope(s string) bool {
	family, access, ok := strings.Cut(s, ":")
	if !ok || (access != Read && access != Write) {
		return false
	}
	return family == "*" || slices.Contains(Families, family)
}

// Allows reports whether the key's scopes permit access (Read or Write) to family;
// a key without scopes may do everything.
func (k *Key) Allows(family, access string) bool {
	if k.Scopes == nil {
		return true
	}
	for _, s := range k.Scopes {
		f, a, _ := strings.Cut(s, ":")
		if (f == "*" || f == family) && (a == Write || a == access) {
			return true
		}
	}
	return false
}

// Hasher computes the keyed hash of a key with the server-side pepper.
type Hasher struct{ pepper []byte }

// NewHasher returns a Hasher; the pepper must hold at least 32 bytes.
func NewHasher(pepper []byte) (*Hasher, error) {
	if len(pepper) < 32 {
		return nil, errors.New("keys: the key-hash pepper must hold at least 32 bytes")
	}
	return &Hasher{pepper: append([]byte(nil), pepper...)}, nil
}

// Hash returns HMAC-SHA256(pepper, key).
func (h *Hasher) Hash(key string) [32]byte {
	m := hmac.New(sha256.New, h.pepper)
	m.Write([]byte(key))
	var out [32]byte
	copy(out[:], m.Sum(nil))
	return out
}

// Generate returns a new random key.
func Generate() (string, error) {
	b := make([]byte, 0, len(Prefix)+secretLen)
	b = append(b, Prefix...)
	max := big.NewInt(int64(len(base62)))
	for i := 0; i < secretLen; i++ {
		n, err := rand.Int(rand.Reader, max)
		if err != nil {
			return "", err
		}
		b = append(b, base62[n.Int64()])
	}
	return string(b), nil
}

// WellFormed reports whether s has the shape of a key (cheap pre-check before hashing).
func WellFormed(s string) bool { return wellFormed(s) }

func wellFormed[S string | []byte](s S) bool {
	if len(s) != len(Prefix)+secretLen || string(s[:len(Prefix)]) != Prefix {
		return false
	}
	for i := len(Prefix); i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z') {
			return false
		}
	}
	return true
}
