package webhooks_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/customerapi/platform/clients/go/webhooks"
)

const (
	secret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	oldSecret = "whsec_c2VjcmV0LW9mLTMyLWJ5dGVzLWZvci10ZXN0aW5nIQ=="
)

// sign builds the headers the webhooks service sends, by the document's definition
// (not with the library under test).
func sign(t *testing.T, at time.Time, body []byte, secrets ...string) http.Header {
	t.Helper()
	h := http.Header{}
	id, ts := "evt_01kjzdf9zdec1b0mjavxbds9rf", strconv.FormatInt(at.Unix(), 10)
	h.Set("webhook-id", id)
	h.Set("webhook-timestamp", ts)
	h.Set("X-Webhook-Timestamp", strconv.FormatInt(at.UnixMilli(), 10))
	var sigs string
	for i, s := range secrets {
		key, err := base64.StdEncoding.DecodeString(s[len("whsec_"):])
		if err != nil {
			t.Fatal(err)
		}
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(id + "." + ts + "."))
		mac.Write(body)
		if i > 0 {
			sigs += " "
		}
		sigs += "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	}
	h.Set("webhook-signature", sigs)
	mac := hmac.New(sha256.New, []byte(secrets[0]))
	mac.Write(body)
	h.Set("X-Webhook-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	return h
}

func TestVerify(t *testing.T) {
	body := []byte(`{"timestamp":"2026-03-05T16:32:10.221Z","eventId":"evt_01kjzdf9zdec1b0mjavxbds9rf","payload":{"type":"form.submitted"}}`)
	v, err := webhooks.NewVerifier(secret)
	if err != nil {
		t.Fatal(err)
	}
	h := sign(t, time.Now(), body, secret)
	if err := v.Verify(body, h); err != nil {
		t.Fatalf("a good delivery: %v", err)
	}
	if err := v.VerifySignature256(body, h); err != nil {
		t.Fatalf("a good delivery (X-Webhook-Signature-256): %v", err)
	}
	tampered := append([]byte{}, body...)
	tampered[len(tampered)-3] = 'X'
	for name, c := range map[string]struct {
		body []byte
		h    http.Header
		want error
	}{
		"tampered body": {tampered, h, webhooks.ErrBadSignature},
		"wrong secret":  {body, sign(t, time.Now(), body, oldSecret), webhooks.ErrBadSignature},
		"stale":         {body, sign(t, time.Now().Add(-6*time.Minute), body, secret), webhooks.ErrStale},
		"future":        {body, sign(t, time.Now().Add(6*time.Minute), body, secret), webhooks.ErrStale},
		"no headers":    {body, http.Header{}, webhooks.ErrMissingHeaders},
	} {
		if err := v.Verify(c.body, c.h); !errors.Is(err, c.want) {
			t.Errorf("%s: Verify = %v, want %v", name, err, c.want)
		}
		if err := v.VerifySignature256(c.body, c.h); !errors.Is(err, c.want) {
			t.Errorf("%s: VerifySignature256 = %v, want %v", name, err, c.want)
		}
	}
	// The spec's header does not sign its timestamp: a replay with a fresh one passes
	// VerifySignature256, which is why Verify never falls back to it.
	replay := sign(t, time.Now().Add(-time.Hour), body, secret)
	replay.Set("X-Webhook-Timestamp", strconv.FormatInt(time.Now().UnixMilli(), 10))
	if err := v.VerifySignature256(body, replay); err != nil {
		t.Fatalf("expected the unsigned timestamp to be replayable: %v", err)
	}
	replay.Del("webhook-signature")
	if err := v.Verify(body, replay); err == nil {
		t.Fatal("Verify accepted a delivery without webhook-signature")
	}
}

// During a rotation the receiver holds both secrets; the sender signs with both for a day.
func TestVerifyDuringRotation(t *testing.T) {
	body := []byte(`{"eventId":"evt_1"}`)
	both, err := webhooks.NewVerifier(secret, oldSecret)
	if err != nil {
		t.Fatal(err)
	}
	for name, h := range map[string]http.Header{
		"new only":      sign(t, time.Now(), body, secret),
		"old only":      sign(t, time.Now(), body, oldSecret),
		"new, then old": sign(t, time.Now(), body, secret, oldSecret),
	} {
		if err := both.Verify(body, h); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if err := both.VerifySignature256(body, h); err != nil {
			t.Errorf("%s (X-Webhook-Signature-256): %v", name, err)
		}
	}
	onlyOld, _ := webhooks.NewVerifier(oldSecret)
	if err := onlyOld.Verify(body, sign(t, time.Now(), body, secret)); !errors.Is(err, webhooks.ErrBadSignature) {
		t.Fatalf("old secret against a new signature: %v", err)
	}
	if _, err := webhooks.NewVerifier("whsec_!!notbase64"); err == nil {
		t.Fatal("a malformed secret was accepted")
	}
}
