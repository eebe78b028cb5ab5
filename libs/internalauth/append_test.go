package internalauth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"strconv"
	"strings"
	"testing"
	"time"
)

// referenceSign is the scheme as the package comment states it, with crypto/hmac.
func referenceSign(secret []byte, c Claims, at time.Time) string {
	t := strconv.FormatInt(at.Unix(), 10)
	h := hmac.New(sha256.New, secret)
	for _, f := range []string{Version, t, c.TenantID, c.KeyID, c.RequestID} {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(f)))
		h.Write(n[:])
		h.Write([]byte(f))
	}
	return Version + ",t=" + t + "," + base64.StdEncoding.EncodeToString(h.Sum(nil))
}

// The prepared-pad MAC is crypto/hmac's, byte for byte, for secrets shorter and longer
// than SHA-256's block and for claims longer than the stack buffer.
func TestSignatureIsHMACSHA256(t *testing.T) {
	at := time.Unix(1_750_000_000, 0)
	for _, secret := range [][]byte{[]byte(strings.Repeat("k", 32)), []byte(strings.Repeat("L", 64)), []byte(strings.Repeat("x", 100))} {
		s, err := New(secret)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []Claims{
			{TenantID: "acme", KeyID: "key_1", RequestID: "req_01m875mfgge6c96yv94c4bv6f1"},
			{RequestID: "req_1"}, // a download: no tenant, no key
			{TenantID: strings.Repeat("t", 300), KeyID: "k", RequestID: strings.Repeat("r", 128)},
		} {
			got, want := s.Sign(c, at), referenceSign(secret, c, at)
			if got != want {
				t.Errorf("secret of %d bytes, %+v: signed %q, HMAC-SHA256 of the scheme is %q", len(secret), c, got, want)
			}
			if err := s.Verify(want, c, at); err != nil {
				t.Errorf("secret of %d bytes, %+v: the reference signature was refused: %v", len(secret), c, err)
			}
		}
	}
}

// The gateway signs every request it forwards: AppendSignature must not allocate.
func TestAppendSignatureDoesNotAllocate(t *testing.T) {
	s, _ := New([]byte(strings.Repeat("k", 32)))
	c := Claims{TenantID: "acme", KeyID: "key_1", RequestID: "req_01m875mfgge6c96yv94c4bv6f1"}
	buf := make([]byte, 0, 128)
	at := time.Now()
	if n := testing.AllocsPerRun(100, func() { buf = s.AppendSignature(buf[:0], c, at) }); n != 0 {
		t.Fatalf("AppendSignature: %v allocations per signature, want 0", n)
	}
}
