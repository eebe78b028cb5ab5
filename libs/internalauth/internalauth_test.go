package internalauth

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

var (
	secret = []byte(strings.Repeat("k", 32))
	other  = []byte(strings.Repeat("o", 32))
)

func mustNew(t *testing.T, secret []byte, extra ...[]byte) *Signer {
	t.Helper()
	s, err := New(secret, extra...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestVerify(t *testing.T) {
	s := mustNew(t, secret)
	now := time.Unix(1_750_000_000, 0)
	claims := Claims{TenantID: "acme", KeyID: "key_1", RequestID: "req_1"}
	good := s.Sign(claims, now)
	for _, tc := range []struct {
		name   string
		value  string
		claims Claims
		want   error // nil: accepted
	}{
		{"good", good, claims, nil},
		{"good, 59 s old", s.Sign(claims, now.Add(-59*time.Second)), claims, nil},
		{"good, 59 s ahead", s.Sign(claims, now.Add(59*time.Second)), claims, nil},
		{"missing", "", claims, ErrMissing},
		{"wrong secret", mustNew(t, other).Sign(claims, now), claims, ErrMismatch},
		{"tampered tenant", good, Claims{TenantID: "globex", KeyID: "key_1", RequestID: "req_1"}, ErrMismatch},
		{"tenant dropped", good, Claims{KeyID: "key_1", RequestID: "req_1"}, ErrMismatch},
		{"tampered key id", good, Claims{TenantID: "acme", KeyID: "key_2", RequestID: "req_1"}, ErrMismatch},
		{"tampered request id", good, Claims{TenantID: "acme", KeyID: "key_1", RequestID: "req_2"}, ErrMismatch},
		{"fields shifted", s.Sign(Claims{TenantID: "acmekey_1", RequestID: "req_1"}, now), claims, ErrMismatch},
		{"tampered time", strings.Replace(good, "t=1750000000", "t=1750000001", 1), claims, ErrMismatch},
		{"stale", s.Sign(claims, now.Add(-61*time.Second)), claims, ErrStale},
		{"future", s.Sign(claims, now.Add(61*time.Second)), claims, ErrFuture},
		{"other version", "v2" + strings.TrimPrefix(good, "v1"), claims, ErrMalformed},
		{"no time", "v1," + good[strings.LastIndex(good, ",")+1:], claims, ErrMalformed},
		{"time not a number", "v1,t=soon," + good[strings.LastIndex(good, ",")+1:], claims, ErrMalformed},
		{"MAC not base64", "v1,t=1750000000,!!!", claims, ErrMalformed},
		{"MAC truncated", good[:len(good)-8], claims, ErrMalformed},
		{"garbage", "let me in", claims, ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := s.Verify(tc.value, tc.claims, now)
			if tc.want == nil && err != nil {
				t.Fatalf("a valid signature was refused: %v", err)
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("Verify(%q) = %v, want %v: a forged or stale signature must be refused", tc.value, err, tc.want)
			}
		})
	}
}

func TestFormat(t *testing.T) {
	v := mustNew(t, secret).Sign(Claims{TenantID: "acme"}, time.Unix(1_750_000_000, 0))
	parts := strings.Split(v, ",")
	if len(parts) != 3 || parts[0] != "v1" || parts[1] != "t=1750000000" || len(parts[2]) != 44 {
		t.Fatalf("signature %q is not v1,t=<unix>,<base64 of 32 bytes>", v)
	}
}

// During a rotation the services accept the old and the new secret; afterwards only one.
func TestRotation(t *testing.T) {
	now := time.Now()
	c := Claims{TenantID: "acme", RequestID: "req_1"}
	both := mustNew(t, secret, other)
	for _, signer := range []*Signer{mustNew(t, secret), mustNew(t, other)} {
		if err := both.Verify(signer.Sign(c, now), c, now); err != nil {
			t.Fatalf("a signature with either secret must pass during a rotation: %v", err)
		}
	}
	if err := mustNew(t, secret).Verify(both.Sign(c, now), c, now); err != nil {
		t.Fatalf("a rotating signer must sign with its first secret: %v", err)
	}
	if err := mustNew(t, secret).Verify(mustNew(t, other).Sign(c, now), c, now); !errors.Is(err, ErrMismatch) {
		t.Fatalf("the extra secret must not be accepted once removed: %v", err)
	}
}

func TestShortSecretsAreRefused(t *testing.T) {
	if _, err := New(secret[:31]); err == nil {
		t.Fatal("a 31-byte secret was accepted")
	}
	if _, err := New(secret, other[:8]); err == nil {
		t.Fatal("a short extra secret was accepted")
	}
}

func TestStamp(t *testing.T) {
	s := mustNew(t, secret)
	now := time.Now()
	h := http.Header{}
	c := Claims{TenantID: "acme", KeyID: "key_1", RequestID: "req_1"}
	Stamp(h, s, c, now)
	if h.Get(TenantHeader) != "acme" || h.Get(KeyHeader) != "key_1" {
		t.Fatalf("headers %v", h)
	}
	if err := s.Verify(h.Get(SignatureHeader), c, now); err != nil {
		t.Fatal(err)
	}
	h = http.Header{}
	Stamp(h, s, Claims{RequestID: "req_2"}, now)
	if len(h) != 1 || h.Get(SignatureHeader) == "" {
		t.Fatalf("a download carries only the signature: %v", h)
	}
}
