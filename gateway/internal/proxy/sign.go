package proxy

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"strconv"
	"time"

	"github.com/customerapi/platform/libs/internalauth"
)

// Signer makes the signature of libs/internalauth (the services verify it with
// internalauth.Signer.Verify) without allocating: the forwarding of every request signs
// its internal headers. The secret's inner and outer HMAC pads are prepared once, and the
// MAC is two SHA-256 sums over stack buffers (RFC 2104), the same bytes as crypto/hmac's.
type Signer struct {
	ipad, opad [sha256.BlockSize]byte
}

// NewSigner returns a Signer for the shared secret (INTERNAL_AUTH_SECRET).
func NewSigner(secret []byte) (*Signer, error) {
	if len(secret) < internalauth.MinSecretBytes {
		return nil, fmt.Errorf("internalauth: a secret must hold at least %d bytes", internalauth.MinSecretBytes)
	}
	if len(secret) > sha256.BlockSize { // RFC 2104: a long key is hashed first
		sum := sha256.Sum256(secret)
		secret = sum[:]
	}
	s := &Signer{}
	copy(s.ipad[:], secret)
	copy(s.opad[:], secret)
	for i := range s.ipad {
		s.ipad[i] ^= 0x36
		s.opad[i] ^= 0x5c
	}
	return s, nil
}

// AppendSignature appends the internalauth.SignatureHeader value for c at time at to dst:
// "v1,t=<unix seconds>,<base64 MAC>", the MAC over the length-prefixed version, time,
// tenant ID, key ID and request ID (as internalauth.Signer.Sign).
func (s *Signer) AppendSignature(dst []byte, c internalauth.Claims, at time.Time) []byte {
	var tb [20]byte
	t := strconv.AppendInt(tb[:0], at.Unix(), 10)
	var buf [512]byte
	n := sha256.BlockSize + 4*5 + len(internalauth.Version) + len(t) + len(c.TenantID) + len(c.KeyID) + len(c.RequestID)
	msg := buf[:0]
	if n > len(buf) { // longer claims than any the platform makes
		msg = make([]byte, 0, n)
	}
	msg = append(msg, s.ipad[:]...)
	msg = appendField(msg, internalauth.Version)
	msg = appendField(msg, string(t))
	msg = appendField(msg, c.TenantID)
	msg = appendField(msg, c.KeyID)
	msg = appendField(msg, c.RequestID)
	inner := sha256.Sum256(msg)
	var outer [sha256.BlockSize + sha256.Size]byte
	copy(outer[:], s.opad[:])
	copy(outer[sha256.BlockSize:], inner[:])
	sum := sha256.Sum256(outer[:])

	dst = append(dst, internalauth.Version+",t="...)
	dst = append(dst, t...)
	dst = append(dst, ',')
	return base64.StdEncoding.AppendEncode(dst, sum[:])
}

func appendField(b []byte, f string) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(f)))
	return append(b, f...)
}
