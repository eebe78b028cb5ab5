// Package internalauth signs the internal headers the gateway adds to a request (tenant,
// API key ID, request ID) and verifies them in the services, so that reaching a service's
// port is not enough to act as a tenant: the caller must also hold the secret the gateway
// and the services share.
//
// The signature travels in SignatureHeader as "v1,t=<unix seconds>,<base64 MAC>", where MAC
// is HMAC-SHA256 with the shared secret over the length-prefixed fields "v1", t, tenant
// ID, key ID and request ID (each a 4-byte big-endian length, then its bytes; empty
// fields are empty, never left out). A signature is accepted for MaxSkew either side of
// the verifier's clock.
package internalauth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"
	"time"
)

// Prefix starts every header that only the gateway may set; the gateway drops client-sent
// headers with this prefix.
const Prefix = "X-Internal-"

// TenantHeader carries the authenticated tenant ID from the gateway to a service.
const TenantHeader = Prefix + "Tenant-Id"

// KeyHeader carries the ID of the API key that authenticated the request.
const KeyHeader = Prefix + "Key-Id"

// SignatureHeader carries the gateway's signature of the internal headers.
const SignatureHeader = Prefix + "Signature"

// Version is the scheme of the signatures this package makes.
const Version = "v1"

// MaxSkew is how far a signature's time may lie behind or ahead of the verifier's clock.
const MaxSkew = 60 * time.Second

// MinSecretBytes is the shortest secret accepted.
const MinSecretBytes = 32

// Reasons a signature is refused; Verify wraps one of them.
var (
	ErrMissing   = errors.New("no signature")
	ErrMalformed = errors.New("malformed signature")
	ErrStale     = errors.New("signature too old")
	ErrFuture    = errors.New("signature dated in the future")
	ErrMismatch  = errors.New("signature does not match")
)

// Claims are what a signature vouches for. Empty fields are signed as empty: a download
// has no tenant and no key.
type Claims struct {
	TenantID  string
	KeyID     string
	RequestID string
}

// Signer makes signatures with one secret and accepts those of it and of any extra
// secrets (a rotation in progress).
type Signer struct {
	secret []byte
	accept [][]byte
}

// New returns a Signer that signs with secret and also accepts signatures made with any
// of extra; each must be at least MinSecretBytes long.
func New(secret []byte, extra ...[]byte) (*Signer, error) {
	s := &Signer{secret: secret}
	for _, k := range append([][]byte{secret}, extra...) {
		if len(k) < MinSecretBytes {
			return nil, fmt.Errorf("internalauth: a secret must hold at least %d bytes", MinSecretBytes)
		}
		s.accept = append(s.accept, k)
	}
	return s, nil
}

// Sign returns the SignatureHeader value for c at time at.
func (s *Signer) Sign(c Claims, at time.Time) string {
	t := strconv.FormatInt(at.Unix(), 10)
	return Version + ",t=" + t + "," + base64.StdEncoding.EncodeToString(mac(s.secret, t, c))
}

// Verify checks a SignatureHeader value against c at time now; the error wraps one of
// ErrMissing, ErrMalformed, ErrStale, ErrFuture or ErrMismatch.
func (s *Signer) Verify(value string, c Claims, now time.Time) error {
	if value == "" {
		return ErrMissing
	}
	version, rest, ok1 := strings.Cut(value, ",")
	t, sig, ok2 := strings.Cut(strings.TrimPrefix(rest, "t="), ",")
	unix, err := strconv.ParseInt(t, 10, 64)
	got, err2 := base64.StdEncoding.DecodeString(sig)
	if !ok1 || !ok2 || version != Version || !strings.HasPrefix(rest, "t=") || err != nil || err2 != nil ||
		len(got) != sha256.Size {
		return ErrMalformed
	}
	at := time.Unix(unix, 0)
	if age := now.Sub(at); age > MaxSkew {
		return fmt.Errorf("%w: made %s ago", ErrStale, age.Round(time.Second))
	} else if age < -MaxSkew {
		return fmt.Errorf("%w: %s ahead", ErrFuture, (-age).Round(time.Second))
	}
	for _, k := range s.accept {
		if hmac.Equal(got, mac(k, t, c)) {
			return nil
		}
	}
	return ErrMismatch
}

// mac is HMAC-SHA256 over the length-prefixed version, time and claims.
func mac(secret []byte, t string, c Claims) []byte {
	h := hmac.New(sha256.New, secret)
	for _, f := range []string{Version, t, c.TenantID, c.KeyID, c.RequestID} {
		writeField(h, f)
	}
	return h.Sum(nil)
}

func writeField(h hash.Hash, f string) {
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(f)))
	h.Write(n[:])
	h.Write([]byte(f))
}
