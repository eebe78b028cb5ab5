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
	sign   key
	accept []key
}

// key is one secret's inner and outer HMAC pads (RFC 2104), prepared once: a MAC is
// then two SHA-256 sums over stack buffers, the same bytes as crypto/hmac's, without
// allocating (the gateway signs every request it forwards).
type key struct {
	ipad, opad [sha256.BlockSize]byte
}

func newKey(secret []byte) key {
	if len(secret) > sha256.BlockSize { // RFC 2104: a long key is hashed first
		sum := sha256.Sum256(secret)
		secret = sum[:]
	}
	var k key
	copy(k.ipad[:], secret)
	copy(k.opad[:], secret)
	for i := range k.ipad {
		k.ipad[i] ^= 0x36
		k.opad[i] ^= 0x5c
	}
	return k
}

// New returns a Signer that signs with secret and also accepts signatures made with any
// of extra; each must be at least MinSecretBytes long.
func New(secret []byte, extra ...[]byte) (*Signer, error) {
	s := &Signer{}
	for _, k := range append([][]byte{secret}, extra...) {
		if len(k) < MinSecretBytes {
			return nil, fmt.Errorf("internalauth: a secret must hold at least %d bytes", MinSecretBytes)
		}
		s.accept = append(s.accept, newKey(k))
	}
	s.sign = s.accept[0]
	return s, nil
}

// Sign returns the SignatureHeader value for c at time at.
func (s *Signer) Sign(c Claims, at time.Time) string {
	return string(s.AppendSignature(nil, c, at))
}

// AppendSignature appends the SignatureHeader value for c at time at to dst, without
// allocating when dst has room.
func (s *Signer) AppendSignature(dst []byte, c Claims, at time.Time) []byte {
	var tb [20]byte
	t := strconv.AppendInt(tb[:0], at.Unix(), 10)
	sum := s.sign.mac(t, c)
	dst = append(dst, Version+",t="...)
	dst = append(dst, t...)
	dst = append(dst, ',')
	return base64.StdEncoding.AppendEncode(dst, sum[:])
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
	for i := range s.accept {
		if want := s.accept[i].mac([]byte(t), c); hmac.Equal(got, want[:]) {
			return nil
		}
	}
	return ErrMismatch
}

// mac is HMAC-SHA256 over the length-prefixed version, time and claims.
func (k *key) mac(t []byte, c Claims) [sha256.Size]byte {
	var buf [512]byte
	n := sha256.BlockSize + 4*5 + len(Version) + len(t) + len(c.TenantID) + len(c.KeyID) + len(c.RequestID)
	msg := buf[:0]
	if n > len(buf) { // longer claims than any the platform makes
		msg = make([]byte, 0, n)
	}
	msg = append(msg, k.ipad[:]...)
	msg = appendField(msg, Version)
	msg = appendField(msg, string(t))
	msg = appendField(msg, c.TenantID)
	msg = appendField(msg, c.KeyID)
	msg = appendField(msg, c.RequestID)
	inner := sha256.Sum256(msg)
	var outer [sha256.BlockSize + sha256.Size]byte
	copy(outer[:], k.opad[:])
	copy(outer[sha256.BlockSize:], inner[:])
	return sha256.Sum256(outer[:])
}

func appendField(b []byte, f string) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(f)))
	return append(b, f...)
}
