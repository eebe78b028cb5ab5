package signing

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

func mustKey(t *testing.T, s string) Key {
	t.Helper()
	k, err := ParseKey(s)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestNewSecretForm(t *testing.T) {
	a, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewSecret()
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(a, SecretPrefix))
	if !strings.HasPrefix(a, SecretPrefix) || err != nil || len(raw) != 32 || a == b {
		t.Fatalf("secret %q (%d bytes, %v)", a, len(raw), err)
	}
}

func TestParseKeyRefusesMalformedSecrets(t *testing.T) {
	for _, s := range []string{"", "secret", "whsec_", "whsec_!!!", "WHSEC_AAAA"} {
		if _, err := ParseKey(s); err == nil {
			t.Errorf("ParseKey(%q) accepted", s)
		}
	}
}

// The headers match an independent computation of both schemes.
func TestSignMatchesBothSchemes(t *testing.T) {
	secret, _ := NewSecret()
	body := []byte(`{"timestamp":"2026-01-02T03:04:05.678Z","eventId":"evt_1","payload":{"type":"form.submitted"}}`)
	now := time.UnixMilli(1767323045678)
	h := http.Header{}
	Sign(h, Keys{Current: mustKey(t, secret)}, "evt_1", body, now)

	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	if got := h.Get(HeaderSignature256); got != "sha256="+hex.EncodeToString(m.Sum(nil)) {
		t.Fatalf("X-Webhook-Signature-256 = %s", got)
	}
	if h.Get(HeaderTimestamp) != "1767323045678" || h.Get(HeaderStdTimestamp) != "1767323045" || h.Get(HeaderID) != "evt_1" {
		t.Fatalf("timestamps/id = %v", h)
	}
	raw, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, SecretPrefix))
	m = hmac.New(sha256.New, raw)
	m.Write([]byte("evt_1.1767323045." + string(body)))
	if got := h.Get(HeaderStdSignature); got != "v1,"+base64.StdEncoding.EncodeToString(m.Sum(nil)) {
		t.Fatalf("webhook-signature = %s", got)
	}
	if !verify256(secret, body, h.Get(HeaderSignature256)) ||
		!verifyStandard(secret, "evt_1", "1767323045", body, h.Get(HeaderStdSignature)) {
		t.Fatal("own signatures do not verify")
	}
}

func TestVerifyRefusesTampering(t *testing.T) {
	secret, _ := NewSecret()
	other, _ := NewSecret()
	body := []byte(`{"eventId":"evt_1"}`)
	h := http.Header{}
	now := time.Now()
	Sign(h, Keys{Current: mustKey(t, secret)}, "evt_1", body, now)
	ts := strconv.FormatInt(now.Unix(), 10)
	for name, ok := range map[string]bool{
		"other secret":      verify256(other, body, h.Get(HeaderSignature256)),
		"changed body":      verify256(secret, []byte(`{"eventId":"evt_2"}`), h.Get(HeaderSignature256)),
		"no prefix":         verify256(secret, body, strings.TrimPrefix(h.Get(HeaderSignature256), "sha256=")),
		"std other secret":  verifyStandard(other, "evt_1", ts, body, h.Get(HeaderStdSignature)),
		"std other id":      verifyStandard(secret, "evt_2", ts, body, h.Get(HeaderStdSignature)),
		"std replayed time": verifyStandard(secret, "evt_1", "1", body, h.Get(HeaderStdSignature)),
	} {
		if ok {
			t.Errorf("%s: verified", name)
		}
	}
}

// After a rotation X-Webhook-Signature-256 uses only the new secret; webhook-signature
// carries both, so receivers that have not switched yet keep verifying.
func TestRotationGracePeriod(t *testing.T) {
	old, _ := NewSecret()
	cur, _ := NewSecret()
	prev := mustKey(t, old)
	body := []byte(`{}`)
	now := time.Now()
	h := http.Header{}
	Sign(h, Keys{Current: mustKey(t, cur), Previous: &prev}, "evt_9", body, now)
	ts := strconv.FormatInt(now.Unix(), 10)
	if len(strings.Fields(h.Get(HeaderStdSignature))) != 2 {
		t.Fatalf("webhook-signature = %q", h.Get(HeaderStdSignature))
	}
	if !verifyStandard(old, "evt_9", ts, body, h.Get(HeaderStdSignature)) || !verifyStandard(cur, "evt_9", ts, body, h.Get(HeaderStdSignature)) {
		t.Fatal("both secrets should verify webhook-signature")
	}
	if verify256(old, body, h.Get(HeaderSignature256)) || !verify256(cur, body, h.Get(HeaderSignature256)) {
		t.Fatal("X-Webhook-Signature-256 must use only the new secret")
	}
}

func BenchmarkSign(b *testing.B) {
	secret, _ := NewSecret()
	k, _ := ParseKey(secret)
	body := []byte(strings.Repeat("x", 512))
	h := http.Header{}
	now := time.Now()
	for b.Loop() {
		Sign(h, Keys{Current: k}, "evt_01jabcdefghjkmnpqrstvwxyz0", body, now)
	}
}

// verify256 checks an X-Webhook-Signature-256 value as a receiver does.
func verify256(secret string, body []byte, header string) bool {
	got, ok := strings.CutPrefix(header, "sha256=")
	return ok && hmac.Equal([]byte(got), []byte(hex.EncodeToString(mac([]byte(secret), body))))
}

// verifyStandard checks a webhook-signature value as Standard Webhooks libraries do.
func verifyStandard(secret, id, timestamp string, body []byte, header string) bool {
	k, err := ParseKey(secret)
	if err != nil {
		return false
	}
	want := "v1," + base64.StdEncoding.EncodeToString(mac(k.raw, standardContent(id, timestamp, body)))
	for _, sig := range strings.Fields(header) {
		if hmac.Equal([]byte(sig), []byte(want)) {
			return true
		}
	}
	return false
}
