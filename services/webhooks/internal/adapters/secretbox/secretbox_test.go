package secretbox

import (
	"encoding/base64"
	"strings"
	"testing"
)

func key(b byte) string {
	return base64.StdEncoding.EncodeToString([]byte(strings.Repeat(string(rune('a'+b)), KeySize)))
}

var row = Binding{TenantID: "acme", SubscriptionID: "whsub_1", Column: "secret"}

// A sealed value holds neither the secret nor any part of it, and two seals of the same
// secret differ (a fresh nonce each).
func TestSealHidesTheSecret(t *testing.T) {
	k, err := Parse("k1:" + key(1))
	if err != nil {
		t.Fatal(err)
	}
	const secret = "whsec_c2VjcmV0c2VjcmV0c2VjcmV0"
	a, b := k.Seal(secret, row), k.Seal(secret, row)
	if strings.Contains(a, "c2VjcmV0") || !strings.HasPrefix(a, "enc:v1:k1:") || a == b {
		t.Fatalf("sealed %q and %q: want the prefix, no trace of the secret, a fresh nonce each", a, b)
	}
	got, current, err := k.Open(a, row)
	if err != nil || got != secret || !current {
		t.Fatalf("open = %q, %v, %v", got, current, err)
	}
}

// A value sealed for one row does not open for another row, tenant or column.
func TestSealedValueIsBoundToItsRow(t *testing.T) {
	k, _ := Parse("k1:" + key(1))
	sealed := k.Seal("whsec_x", row)
	for _, other := range []Binding{
		{TenantID: "acme", SubscriptionID: "whsub_2", Column: "secret"},
		{TenantID: "globex", SubscriptionID: "whsub_1", Column: "secret"},
		{TenantID: "acme", SubscriptionID: "whsub_1", Column: "previous_secret"},
	} {
		if got, _, err := k.Open(sealed, other); err == nil {
			t.Errorf("a value sealed for %+v opened for %+v as %q: ciphertexts must not move between rows", row, other, got)
		}
	}
}

// After a rotation to "k2,k1", a value sealed under k1 opens and is reported stale (to be
// sealed again under k2); without k1 it does not open.
func TestRotation(t *testing.T) {
	old, _ := Parse("k1:" + key(1))
	sealed := old.Seal("whsec_x", row)
	rotated, _ := Parse("k2:" + key(2) + ", k1:" + key(1))
	got, current, err := rotated.Open(sealed, row)
	if err != nil || got != "whsec_x" || current {
		t.Fatalf("open under k2,k1 = %q, current %v, %v: want the secret, not current", got, current, err)
	}
	if again := rotated.Seal(got, row); !strings.HasPrefix(again, "enc:v1:k2:") {
		t.Fatalf("sealed again as %q, want under k2", again)
	}
	dropped, _ := Parse("k2:" + key(2))
	if _, _, err := dropped.Open(sealed, row); err == nil || !strings.Contains(err.Error(), "key k1") {
		t.Fatalf("open of a k1 value without k1: %v, want an error naming k1", err)
	}
	if got, current, err := rotated.Open("whsec_plain", row); err != nil || got != "whsec_plain" || current {
		t.Fatalf("a plaintext value = %q, current %v, %v: want it read as is and stale", got, current, err)
	}
}

// A missing or malformed key ring is refused with an error that says what is wanted.
func TestParseRefusesBadKeyRings(t *testing.T) {
	for spec, want := range map[string]string{
		"":              "no key",
		" , ":           "no key", //nolint:gocritic // a setting of only a comma and spaces holds no key
		key(1):          "want <key ID>:<base64 key>",
		"k1:not*base64": "not base64",
		"k1:" + base64.StdEncoding.EncodeToString([]byte("short")): "5 bytes, want 32",
		"k1:" + key(1) + ",k1:" + key(2):                           "listed twice",
		"k 1:" + key(1):                                            "want <key ID>",
	} {
		if _, err := Parse(spec); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want an error saying %q", spec, err, want)
		}
	}
}
