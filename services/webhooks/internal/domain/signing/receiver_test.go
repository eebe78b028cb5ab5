package signing_test

// The receiver code of docs/webhooks.md, checked against the sender's signatures.

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/customerapi/platform/services/webhooks/internal/domain/signing"
)

// Verify checks X-Webhook-Signature-256 and returns the raw body. secret is the
// signingSecret from the create (or rotate_secret) answer, used whole as the key.
func Verify(r *http.Request, secret string) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	ms, err := strconv.ParseInt(r.Header.Get("X-Webhook-Timestamp"), 10, 64)
	if err != nil || time.Since(time.UnixMilli(ms)).Abs() > 5*time.Minute {
		return nil, errors.New("missing or stale X-Webhook-Timestamp")
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	want := "sha256=" + hex.EncodeToString(mac.Sum(nil))
	if !hmac.Equal([]byte(r.Header.Get("X-Webhook-Signature-256")), []byte(want)) {
		return nil, errors.New("bad signature")
	}
	return body, nil
}

// VerifyStandard checks webhook-signature (Standard Webhooks), which also signs the
// event ID and the time, so a replayed request fails the time check.
func VerifyStandard(r *http.Request, body []byte, secret string) error {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return err
	}
	id, ts := r.Header.Get("webhook-id"), r.Header.Get("webhook-timestamp")
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || time.Since(time.Unix(sec, 0)).Abs() > 5*time.Minute {
		return errors.New("missing or stale webhook-timestamp")
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "."))
	mac.Write(body)
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	for _, sig := range strings.Fields(r.Header.Get("webhook-signature")) {
		if hmac.Equal([]byte(sig), []byte(want)) {
			return nil
		}
	}
	return errors.New("bad signature")
}

func signedRequest(t *testing.T, secret string, previous *string, body []byte, at time.Time) *http.Request {
	t.Helper()
	cur, err := signing.ParseKey(secret)
	if err != nil {
		t.Fatal(err)
	}
	keys := signing.Keys{Current: cur}
	if previous != nil {
		prev, _ := signing.ParseKey(*previous)
		keys.Previous = &prev
	}
	r := httptest.NewRequest("POST", "/hook", bytes.NewReader(body))
	signing.Sign(r.Header, keys, "evt_1", body, at)
	return r
}

func TestTheDocumentedReceiverVerifiesDeliveries(t *testing.T) {
	secret, _ := signing.NewSecret()
	old, _ := signing.NewSecret()
	body := []byte(`{"timestamp":"2026-01-01T00:00:00.000Z","eventId":"evt_1","payload":{"type":"form.enriched"}}`)

	r := signedRequest(t, secret, &old, body, time.Now())
	got, err := Verify(r, secret)
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("Verify: %v", err)
	}
	if err := VerifyStandard(r, got, secret); err != nil {
		t.Fatalf("VerifyStandard with the new secret: %v", err)
	}
	if err := VerifyStandard(r, got, old); err != nil {
		t.Fatalf("VerifyStandard with the previous secret: %v", err)
	}
	if _, err := Verify(signedRequest(t, secret, nil, body, time.Now()), old); err == nil {
		t.Fatal("Verify accepted another secret")
	}
	stale := signedRequest(t, secret, nil, body, time.Now().Add(-time.Hour))
	if _, err := Verify(stale, secret); err == nil {
		t.Fatal("Verify accepted an hour-old timestamp")
	}
	if err := VerifyStandard(stale, body, secret); err == nil {
		t.Fatal("VerifyStandard accepted an hour-old timestamp")
	}
}
