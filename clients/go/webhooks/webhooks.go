// Package webhooks verifies the webhook deliveries of the Customer API.
//
// Prefer Verify: it checks the Standard Webhooks header webhook-signature with the
// official library (github.com/standard-webhooks/standard-webhooks/libraries/go), which
// signs the event ID and the timestamp together with the body, so a captured request
// replayed later fails the 5-minute check. The spec's X-Webhook-Signature-256 signs the
// body only: its X-Webhook-Timestamp can be changed by whoever replays a request, so
// VerifySignature256 is for receivers that cannot read the standard headers. Verify never
// falls back to it (that would let a replay strip the standard headers).
//
// Several secrets are accepted at once, for a rotation: give the new and the old
// signingSecret until every delivery is signed with the new one.
package webhooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// Tolerance is how far a delivery's timestamp may be from now (the Standard Webhooks
// libraries' value).
const Tolerance = 5 * time.Minute

// MaxBody is the largest body VerifyRequest reads.
const MaxBody = 1 << 20

// Errors of a refused delivery; test with errors.Is.
var (
	ErrMissingHeaders = errors.New("webhooks: missing signature headers")
	ErrStale          = errors.New("webhooks: timestamp outside the tolerance")
	ErrBadSignature   = errors.New("webhooks: no signature matches")
)

// Verifier checks deliveries against one or more signing secrets (whsec_…).
type Verifier struct {
	secrets []string
	std     []*standardwebhooks.Webhook
	// Now is the clock of VerifySignature256 (time.Now when nil).
	Now func() time.Time
}

// NewVerifier returns a Verifier that accepts a delivery signed with any of secrets.
func NewVerifier(secrets ...string) (*Verifier, error) {
	if len(secrets) == 0 {
		return nil, errors.New("webhooks: at least one secret is needed")
	}
	v := &Verifier{secrets: secrets}
	for _, s := range secrets {
		wh, err := standardwebhooks.NewWebhook(s)
		if err != nil {
			return nil, fmt.Errorf("webhooks: a secret is not a whsec_ secret: %w", err)
		}
		v.std = append(v.std, wh)
	}
	return v, nil
}

// Verify checks webhook-id, webhook-timestamp and webhook-signature against the raw
// body: nil when a signature of one of the secrets matches and the timestamp is within
// Tolerance.
func (v *Verifier) Verify(body []byte, h http.Header) error {
	var err error
	for _, wh := range v.std {
		if err = wh.Verify(body, h); err == nil {
			return nil
		}
		if !errors.Is(err, standardwebhooks.ErrNoMatchingSignature) {
			break // the headers, not the secret, are wrong: another secret cannot help
		}
	}
	switch {
	case errors.Is(err, standardwebhooks.ErrRequiredHeaders), errors.Is(err, standardwebhooks.ErrInvalidHeaders):
		return fmt.Errorf("%w: %w", ErrMissingHeaders, err)
	case errors.Is(err, standardwebhooks.ErrMessageTooOld), errors.Is(err, standardwebhooks.ErrMessageTooNew):
		return fmt.Errorf("%w: %w", ErrStale, err)
	}
	return fmt.Errorf("%w: %w", ErrBadSignature, err)
}

// VerifySignature256 checks the spec's X-Webhook-Signature-256 (the hex HMAC-SHA256 of
// the body keyed with the whole secret string) and that X-Webhook-Timestamp (Unix ms) is
// within Tolerance. The timestamp is not signed: prefer Verify.
func (v *Verifier) VerifySignature256(body []byte, h http.Header) error {
	sig, ts := h.Get("X-Webhook-Signature-256"), h.Get("X-Webhook-Timestamp")
	if sig == "" || ts == "" {
		return ErrMissingHeaders
	}
	ms, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: X-Webhook-Timestamp is not a number", ErrMissingHeaders)
	}
	now := time.Now
	if v.Now != nil {
		now = v.Now
	}
	if now().Sub(time.UnixMilli(ms)).Abs() > Tolerance {
		return ErrStale
	}
	for _, s := range v.secrets {
		mac := hmac.New(sha256.New, []byte(s))
		mac.Write(body)
		if hmac.Equal([]byte(sig), []byte("sha256="+hex.EncodeToString(mac.Sum(nil)))) {
			return nil
		}
	}
	return ErrBadSignature
}

// VerifyRequest reads the body of r (at most MaxBody bytes) and verifies it with Verify;
// it returns the body only when it verifies.
func (v *Verifier) VerifyRequest(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBody+1))
	if err != nil {
		return nil, fmt.Errorf("webhooks: read body: %w", err)
	}
	if len(body) > MaxBody {
		return nil, errors.New("webhooks: body too large")
	}
	if err := v.Verify(body, r.Header); err != nil {
		return nil, err
	}
	return body, nil
}
