package proxy

import (
	"strings"
	"testing"
	"time"

	"github.com/customerapi/platform/libs/internalauth"
)

// The gateway's signatures are internalauth's, byte for byte, and the services accept
// them, for secrets shorter and longer than SHA-256's block and for claims longer than
// the stack buffer.
func TestSignerIsInternalauths(t *testing.T) {
	at := time.Unix(1_750_000_000, 0)
	for _, secret := range [][]byte{[]byte(strings.Repeat("k", 32)), []byte(strings.Repeat("L", 64)), []byte(strings.Repeat("x", 100))} {
		ours, err := NewSigner(secret)
		if err != nil {
			t.Fatal(err)
		}
		theirs, err := internalauth.New(secret)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []internalauth.Claims{
			{TenantID: "acme", KeyID: "key_1", RequestID: "req_01m875mfgge6c96yv94c4bv6f1"},
			{RequestID: "req_1"}, // a download: no tenant, no key
			{TenantID: strings.Repeat("t", 300), KeyID: "k", RequestID: strings.Repeat("r", 128)},
		} {
			got := string(ours.AppendSignature(nil, c, at))
			if want := theirs.Sign(c, at); got != want {
				t.Errorf("secret of %d bytes, %+v: %q, internalauth signs %q", len(secret), c, got, want)
			}
			if err := theirs.Verify(got, c, at); err != nil {
				t.Errorf("refused: %v", err)
			}
		}
	}
	if _, err := NewSigner(make([]byte, 31)); err == nil {
		t.Error("a 31-byte secret was accepted")
	}
}

func TestSignerDoesNotAllocate(t *testing.T) {
	s, _ := NewSigner([]byte(strings.Repeat("k", 32)))
	c := internalauth.Claims{TenantID: "acme", KeyID: "key_1", RequestID: "req_01m875mfgge6c96yv94c4bv6f1"}
	buf := make([]byte, 0, 128)
	at := time.Now()
	if n := testing.AllocsPerRun(100, func() { buf = s.AppendSignature(buf[:0], c, at) }); n != 0 {
		t.Fatalf("AppendSignature: %v allocations", n)
	}
}
