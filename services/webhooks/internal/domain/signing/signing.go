// Package signing makes signing secrets and signs deliveries: the specification's
// X-Webhook-Signature-256 and X-Webhook-Timestamp headers, and the Standard Webhooks
// headers (webhook-id, webhook-timestamp, webhook-signature) beside them.
package signing

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// SecretPrefix starts every signing secret (the Standard Webhooks form).
const SecretPrefix = "whsec_"

// Header names set on every delivery, in canonical form (header names are
// case-insensitive; Standard Webhooks writes its names in lower case).
const (
	HeaderSignature256 = "X-Webhook-Signature-256"
	HeaderTimestamp    = "X-Webhook-Timestamp"
	HeaderID           = "Webhook-Id"
	HeaderStdTimestamp = "Webhook-Timestamp"
	HeaderStdSignature = "Webhook-Signature"
)

// NewSecret returns a fresh secret: "whsec_" and the base64 of 32 random bytes.
func NewSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("signing: random secret: %w", err)
	}
	return SecretPrefix + base64.StdEncoding.EncodeToString(b), nil
}

// Key is a secret ready to sign with.
type Key struct {
	whole []byte // the secret string as returned to the client: keys X-Webhook-Signature-256
	raw   []byte // its decoded bytes: key webhook-signature, as Standard Webhooks libraries expect
}

// ParseKey reads a secret of the form NewSecret makes.
func ParseKey(secret string) (Key, error) {
	enc, ok := strings.CutPrefix(secret, SecretPrefix)
	if !ok {
		return Key{}, errors.New("signing: secret lacks the whsec_ prefix")
	}
	raw, err := base64.StdEncoding.DecodeString(enc)
	if err != nil || len(raw) == 0 {
		return Key{}, errors.New("signing: secret is not base64")
	}
	return Key{whole: []byte(secret), raw: raw}, nil
}

// Keys are the secrets a delivery is signed with: the current one, and the previous one
// during the grace period after a rotation (only in webhook-signature).
type Keys struct {
	Current  Key
	Previous *Key
}

// Sign sets the signature headers of a delivery of body, with event ID id, signed at now,
// in h: a request's http.Header, written directly in canonical form.
func Sign(h map[string][]string, keys Keys, id string, body []byte, now time.Time) {
	h[HeaderSignature256] = []string{"sha256=" + hex.EncodeToString(mac(keys.Current.whole, body))}
	h[HeaderTimestamp] = []string{strconv.FormatInt(now.UnixMilli(), 10)}
	sec := strconv.FormatInt(now.Unix(), 10)
	h[HeaderID] = []string{id}
	h[HeaderStdTimestamp] = []string{sec}
	content := standardContent(id, sec, body)
	sig := "v1," + base64.StdEncoding.EncodeToString(mac(keys.Current.raw, content))
	if keys.Previous != nil {
		sig += " v1," + base64.StdEncoding.EncodeToString(mac(keys.Previous.raw, content))
	}
	h[HeaderStdSignature] = []string{sig}
}

func mac(key []byte, parts ...[]byte) []byte {
	m := hmac.New(sha256.New, key)
	for _, p := range parts {
		m.Write(p)
	}
	return m.Sum(nil)
}

// standardContent is what Standard Webhooks signs: "id.timestamp.body".
func standardContent(id, sec string, body []byte) []byte {
	b := make([]byte, 0, len(id)+len(sec)+2+len(body))
	b = append(b, id...)
	b = append(b, '.')
	b = append(b, sec...)
	b = append(b, '.')
	return append(b, body...)
}
