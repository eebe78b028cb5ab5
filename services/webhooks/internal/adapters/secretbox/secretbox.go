// Package secretbox seals the webhook signing secrets at rest with AES-256-GCM: a fresh
// random nonce per value, the row's tenant, subscription and column bound as additional
// data (a sealed value copied to another row or column does not open), and a key ring
// so the key can be rotated: the first key seals, every key opens.
package secretbox

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Prefix begins every sealed value: "enc:v1:<key ID>:<base64url of nonce and ciphertext>".
// A stored value without it is a plaintext secret written before sealing existed.
const Prefix = "enc:v1:"

// KeySize is the length of a key: AES-256.
const KeySize = 32

// EnvVar is the setting that holds the key ring.
const EnvVar = "WEBHOOK_SECRETS_KEYS"

var keyID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)

// Binding is where a sealed value belongs; it is the additional data of its seal.
type Binding struct {
	TenantID, SubscriptionID, Column string
}

func (b Binding) data(id string) []byte {
	return []byte("customer-api/webhooks/" + b.Column + "\x00" + b.TenantID + "\x00" + b.SubscriptionID + "\x00" + id)
}

// Keyring seals with its first key and opens with any of its keys.
type Keyring struct {
	primary string
	aeads   map[string]cipher.AEAD
}

// Parse reads a key ring: comma-separated "<key ID>:<base64 of 32 bytes>" entries, the
// first of which seals (e.g. "k2:…,k1:…"). Key IDs are 1 to 32 letters, digits, _ or -.
func Parse(spec string) (*Keyring, error) {
	k := &Keyring{aeads: map[string]cipher.AEAD{}}
	for i, entry := range strings.Split(spec, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		id, enc, ok := strings.Cut(entry, ":")
		if !ok || !keyID.MatchString(id) {
			return nil, fmt.Errorf("entry %d: want <key ID>:<base64 key>, the ID of letters, digits, _ or - (at most 32)", i+1)
		}
		if _, dup := k.aeads[id]; dup {
			return nil, fmt.Errorf("key %s: listed twice", id)
		}
		raw, err := base64.StdEncoding.DecodeString(enc)
		if err != nil {
			if raw, err = base64.RawURLEncoding.DecodeString(enc); err != nil {
				return nil, fmt.Errorf("key %s: not base64", id)
			}
		}
		if len(raw) != KeySize {
			return nil, fmt.Errorf("key %s: %d bytes, want %d (openssl rand -base64 32)", id, len(raw), KeySize)
		}
		block, err := aes.NewCipher(raw)
		if err != nil {
			return nil, fmt.Errorf("key %s: %w", id, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("key %s: %w", id, err)
		}
		if k.primary == "" {
			k.primary = id
		}
		k.aeads[id] = aead
	}
	if k.primary == "" {
		return nil, errors.New("no key: want <key ID>:<base64 of 32 bytes>[,<older key ID>:<base64>...]")
	}
	return k, nil
}

// Ephemeral returns a key ring of one random key, for tests and tools that keep nothing.
func Ephemeral() *Keyring {
	raw := make([]byte, KeySize)
	_, _ = rand.Read(raw)          // crypto/rand.Read never fails (Go 1.24 and later)
	block, _ := aes.NewCipher(raw) // a 32-byte key is always valid
	aead, _ := cipher.NewGCM(block)
	return &Keyring{primary: "ephemeral", aeads: map[string]cipher.AEAD{"ephemeral": aead}}
}

// Primary is the ID of the key that seals.
func (k *Keyring) Primary() string { return k.primary }

// SealedPrefix is what every value sealed under the primary key begins with.
func (k *Keyring) SealedPrefix() string { return Prefix + k.primary + ":" }

// Seal encrypts plain for b under the primary key.
func (k *Keyring) Seal(plain string, b Binding) string {
	aead := k.aeads[k.primary]
	nonce := make([]byte, aead.NonceSize())
	_, _ = rand.Read(nonce) // crypto/rand.Read never fails (Go 1.24 and later)
	out := aead.Seal(nonce, nonce, []byte(plain), b.data(k.primary))
	return k.SealedPrefix() + base64.RawURLEncoding.EncodeToString(out)
}

// Open returns the secret a stored value holds for b. current is false when the value
// should be sealed again: it is plaintext, or sealed under a key other than the primary.
func (k *Keyring) Open(stored string, b Binding) (plain string, current bool, err error) {
	rest, sealed := strings.CutPrefix(stored, Prefix)
	if !sealed {
		return stored, false, nil
	}
	id, enc, ok := strings.Cut(rest, ":")
	if !ok {
		return "", false, errors.New("open: malformed sealed value")
	}
	aead, ok := k.aeads[id]
	if !ok {
		return "", false, fmt.Errorf("open: sealed under key %s, which %s does not hold", id, EnvVar)
	}
	raw, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil || len(raw) < aead.NonceSize() {
		return "", false, errors.New("open: malformed sealed value")
	}
	out, err := aead.Open(nil, raw[:aead.NonceSize()], raw[aead.NonceSize():], b.data(id))
	if err != nil {
		return "", false, fmt.Errorf("open: value does not belong to %s of subscription %s, or was altered", b.Column, b.SubscriptionID)
	}
	return string(out), id == k.primary, nil
}
