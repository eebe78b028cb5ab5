package signing

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/customerapi/platform/services/assets/internal/domain"
)

func signer(t *testing.T, key string) *Signer {
	t.Helper()
	s, err := New([]byte(key))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSignAndVerify(t *testing.T) {
	s := signer(t, strings.Repeat("k", 32))
	now := time.Now()
	c := domain.Grant{TenantID: "acme", AssetID: "asset_1", FileID: "file_1", Variant: domain.VariantPreview, Expires: now.Add(time.Hour)}
	tok := s.Sign(c)
	got, err := s.Verify(tok, now)
	if err != nil || got.TenantID != "acme" || got.AssetID != "asset_1" || got.FileID != "file_1" || got.Variant != domain.VariantPreview ||
		got.Expires.Unix() != c.Expires.Unix() {
		t.Fatalf("verify = %+v, %v", got, err)
	}

	body, sig, _ := strings.Cut(tok, ".")
	flip := func(s string, i int) string {
		b := []byte(s)
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		return string(b)
	}
	other := signer(t, strings.Repeat("o", 32)).Sign(c)
	for name, bad := range map[string]string{
		"empty":          "",
		"no signature":   body,
		"body changed":   flip(body, 5) + "." + sig,
		"sig changed":    body + "." + flip(sig, 3),
		"sig truncated":  body + "." + sig[:20],
		"other key":      other,
		"garbage":        "!!!.???",
		"huge":           strings.Repeat("a", 5000) + "." + sig,
		"signed garbage": "e30." + flip(sig, 0), // {} with a wrong signature
	} {
		if _, err := s.Verify(bad, now); !errors.Is(err, domain.ErrLinkInvalid) {
			t.Errorf("%s: %v, want ErrLinkInvalid", name, err)
		}
	}
	if _, err := s.Verify(tok, c.Expires); !errors.Is(err, domain.ErrLinkExpired) {
		t.Fatalf("at expiry: %v", err)
	}
	if _, err := s.Verify(tok, now.Add(2*time.Hour)); !errors.Is(err, domain.ErrLinkExpired) {
		t.Fatalf("after expiry: %v", err)
	}
}

// A link has one spelling: the last character of the signature carries 4 bits of it and
// 2 unused ones, and a lenient decoder accepts all 4 settings of those. Counting
// downloads per link (the gateway's cap) needs every other spelling refused.
func TestOnlyTheCanonicalSpellingVerifies(t *testing.T) {
	s := signer(t, strings.Repeat("k", 32))
	now := time.Now()
	tok := s.Sign(domain.Grant{TenantID: "acme", AssetID: "asset_1", FileID: "file_1", Variant: domain.VariantOriginal, Expires: now.Add(time.Hour)})
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	last := strings.IndexByte(alphabet, tok[len(tok)-1])
	accepted := 0
	for i := range 4 {
		variant := tok[:len(tok)-1] + string(alphabet[last&^3|i])
		if _, err := s.Verify(variant, now); err == nil {
			accepted++
			if variant != tok {
				t.Errorf("%q verifies as well as %q: a link must have one spelling", variant, tok)
			}
		}
	}
	if accepted != 1 {
		t.Fatalf("%d spellings verify, want the one signed", accepted)
	}
}

func TestShortKeyIsRefused(t *testing.T) {
	if _, err := New([]byte("short")); err == nil {
		t.Fatal("a short key was accepted")
	}
}
