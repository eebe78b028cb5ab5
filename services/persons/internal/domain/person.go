// Package domain holds the persons context's types and rules (domains, slugs, identifier
// keys), free of transport and storage concerns.
package domain

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/customerapi/platform/libs/errkind"
)

// Limits of the persons context (the spec leaves them open; docs/api.md records them).
// The API's request bounds are stated by the OpenAPI document, which judges every request
// before a handler runs; these are the ones the domain itself applies: to what the form
// enrichment receives in events, to normalised domains and slugs, and to log payloads as
// sent (a size the document cannot state).
const (
	MaxNameLen       = 255
	MaxEmailLen      = 320
	MaxDomainLen     = 253
	MaxURLLen        = 2048
	MaxPayloadBytes  = 64 << 10
	MaxLinkedPersons = 100
	MaxSlugBaseLen   = 60
	// CountCap bounds the rows counted for a search's totalCount; beyond it the count is
	// null (counting would cost as much as reading every match).
	CountCap = 10000
)

// Errors of the persons context; those with a kind (libs/errkind) carry the answer's detail.
var (
	ErrPersonNotFound   = errkind.NotFound.New("person not found")
	ErrAccountNotFound  = errkind.NotFound.New("account not found")
	ErrLogNotFound      = errkind.NotFound.New("log entry not found")
	ErrDomainTaken      = errkind.Conflict.New("an account with this domain already exists")
	ErrIdempotencyReuse = errkind.Conflict.New("the idempotency key was already used with a different body")
	ErrSlugsExhausted   = errors.New("no free slug found")
	ErrInvalidPayload   = errors.New("the payload cannot be stored as JSON")
	ErrPayloadTooBig    = fmt.Errorf("payload must be at most %d bytes of JSON as sent", MaxPayloadBytes)
)

// Person is an individual contact.
type Person struct {
	ID                 string
	TenantID           string
	Name               string
	Email              *string
	Domain             *string
	Slug               string
	PhoneNumber        *string
	LinkedinProfileURL *string
	CreatedAt          time.Time
	UpdatedAt          time.Time
}

// SearchText is what search matches: name, email and domain, lower-cased here with
// Unicode rules (PostgreSQL's lower() under the C locale folds ASCII letters only).
func (p Person) SearchText() string {
	return SearchKey(p.Name + " " + deref(p.Email) + " " + deref(p.Domain))
}

// SearchKey is the case-folded form of a search query or of a person's search text.
func SearchKey(s string) string { return strings.ToLower(s) }

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// Keys are the person's normalised identifiers, as the enrichment matches them.
func (p Person) Keys() (email, phone, linkedin *string) {
	return mapPtr(p.Email, EmailKey), mapPtr(p.PhoneNumber, PhoneKey), mapPtr(p.LinkedinProfileURL, LinkedinKey)
}

func mapPtr(s *string, f func(string) string) *string {
	if s == nil {
		return nil
	}
	v := f(*s)
	if v == "" {
		return nil
	}
	return &v
}

// PersonPatch is a partial update; Set* false leaves a field alone, a nil value clears it.
type PersonPatch struct {
	Name        *string
	SetEmail    bool
	Email       *string
	SetDomain   bool
	Domain      *string // already normalised
	SetPhone    bool
	PhoneNumber *string
	SetLinkedin bool
	Linkedin    *string
}

// Apply changes p by the patch and reports whether anything changed. When the email
// changes and the patch says nothing of the domain, a domain that was derived from the
// old email (or missing) follows the new email.
func (p *Person) Apply(pt PersonPatch, now time.Time) bool {
	changed := false
	if pt.Name != nil && *pt.Name != p.Name {
		p.Name, changed = *pt.Name, true
	}
	if pt.SetEmail && !equalPtr(pt.Email, p.Email) {
		if !pt.SetDomain && (p.Domain == nil || equalPtr(p.Domain, DomainFromEmail(p.Email))) {
			p.Domain = DomainFromEmail(pt.Email)
		}
		p.Email, changed = pt.Email, true
	}
	if pt.SetDomain && !equalPtr(pt.Domain, p.Domain) {
		p.Domain, changed = pt.Domain, true
	}
	if pt.SetPhone && !equalPtr(pt.PhoneNumber, p.PhoneNumber) {
		p.PhoneNumber, changed = pt.PhoneNumber, true
	}
	if pt.SetLinkedin && !equalPtr(pt.Linkedin, p.LinkedinProfileURL) {
		p.LinkedinProfileURL, changed = pt.Linkedin, true
	}
	if changed {
		p.UpdatedAt = now
	}
	return changed
}

func equalPtr(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// Account is an organisation identified by its canonical domain.
type Account struct {
	ID               string
	TenantID         string
	Domain           string
	Name             *string
	CreatedAt        time.Time
	UpdatedAt        time.Time
	LatestActivityAt *time.Time
	// LinkedPersons holds up to MaxLinkedPersons persons of the domain (single reads).
	LinkedPersons []Person
	// LinkedPersonsCount counts every person of the domain (list reads).
	LinkedPersonsCount int64
}

// Log is an entry written to a person or an account (its owner).
type Log struct {
	ID             string
	OwnerID        string
	Source         string
	Type           string
	Payload        []byte // a JSON object
	IdempotencyKey *string
	CreatedAt      time.Time
	UpdatedAt      *time.Time
	DeletedAt      *time.Time
}

// NormalizeDomain returns the canonical form of a domain: lower case, without scheme,
// credentials, path, port, trailing dot or a leading "www.". It returns "" when what is
// left is not a host name.
func NormalizeDomain(s string) string {
	d := strings.ToLower(strings.TrimSpace(s))
	if i := strings.Index(d, "://"); i >= 0 {
		d = d[i+3:]
	}
	if i := strings.IndexAny(d, "/?#"); i >= 0 {
		d = d[:i]
	}
	if i := strings.LastIndexByte(d, '@'); i >= 0 {
		d = d[i+1:]
	}
	if i := strings.IndexByte(d, ':'); i >= 0 {
		d = d[:i]
	}
	d = strings.TrimSuffix(d, ".")
	d = strings.TrimPrefix(d, "www.")
	if !validHost(d) {
		return ""
	}
	return d
}

// validHost reports whether d is a DNS name of at least two labels of letters, digits
// and inner hyphens.
func validHost(d string) bool {
	if d == "" || len(d) > MaxDomainLen {
		return false
	}
	labels := strings.Split(d, ".")
	if len(labels) < 2 {
		return false
	}
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for _, r := range l {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
				return false
			}
		}
	}
	return true
}

// DomainFromEmail returns the normalised domain of an email address, or nil.
func DomainFromEmail(email *string) *string {
	if email == nil {
		return nil
	}
	i := strings.LastIndexByte(*email, '@')
	if i < 0 {
		return nil
	}
	d := NormalizeDomain((*email)[i+1:])
	if d == "" {
		return nil
	}
	return &d
}

// ValidEmail reports whether s looks like an email address: a non-empty local part and a
// host name, no spaces.
func ValidEmail(s string) bool {
	i := strings.LastIndexByte(s, '@')
	if i <= 0 || strings.ContainsAny(s, " \t\r\n<>") {
		return false
	}
	return validHost(strings.ToLower(s[i+1:]))
}

// EmailKey is the form of an email the enrichment matches on: lower case, trimmed.
func EmailKey(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

// PhoneKey keeps the digits of a phone number and a leading plus.
func PhoneKey(s string) string {
	var b strings.Builder
	for i, r := range strings.TrimSpace(s) {
		if r >= '0' && r <= '9' || r == '+' && i == 0 {
			b.WriteRune(r)
		}
	}
	if b.Len() < 3 {
		return ""
	}
	return b.String()
}

// ValidPhone reports whether s is a plausible phone number: digits with optional spaces,
// dots, hyphens, parentheses and a leading plus; 3 to 20 digits.
func ValidPhone(s string) bool {
	digits := 0
	for i, r := range s {
		switch {
		case r >= '0' && r <= '9':
			digits++
		case r == '+' && i == 0, r == ' ', r == '-', r == '.', r == '(', r == ')':
		default:
			return false
		}
	}
	return digits >= 3 && digits <= 20
}

// LinkedinKey is the form of a LinkedIn profile URL the enrichment matches on: lower
// case, no scheme, no "www.", no query, fragment or trailing slash.
func LinkedinKey(s string) string {
	k := strings.ToLower(strings.TrimSpace(s))
	if i := strings.Index(k, "://"); i >= 0 {
		k = k[i+3:]
	}
	if i := strings.IndexAny(k, "?#"); i >= 0 {
		k = k[:i]
	}
	k = strings.TrimPrefix(k, "www.")
	return strings.TrimRight(k, "/")
}

// SlugBase makes the base of a slug from a name: lower-case ASCII letters and digits
// joined by single hyphens, "person" when nothing is left.
func SlugBase(name string) string {
	var b strings.Builder
	hyphen := false
	for _, r := range strings.ToLower(name) {
		r = fold(r)
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if hyphen && b.Len() > 0 {
				b.WriteByte('-')
			}
			hyphen = false
			b.WriteRune(r)
			if b.Len() >= MaxSlugBaseLen {
				break
			}
			continue
		}
		hyphen = true
	}
	if b.Len() == 0 {
		return "person"
	}
	return strings.TrimRight(b.String(), "-")
}

// fold maps common accented Latin letters to their base letter.
func fold(r rune) rune {
	if r < 128 || !unicode.IsLetter(r) {
		return r
	}
	const from, to = "àáâãäåçèéêëìíîïñòóôõöøùúûüýÿ", "aaaaaaceeeeiiiinoooooouuuuyy"
	fr, tr := []rune(from), []rune(to)
	for i, c := range fr {
		if c == r {
			return tr[i]
		}
	}
	return r
}

// NameFromIdentifier makes a display name for a person known only by an identifier: the
// local part of an email, the last path segment of a LinkedIn URL, or the phone number.
func NameFromIdentifier(email, phone, linkedin *string) string {
	switch {
	case email != nil:
		if i := strings.LastIndexByte(*email, '@'); i > 0 {
			return (*email)[:i]
		}
		return *email
	case linkedin != nil:
		k := LinkedinKey(*linkedin)
		if i := strings.LastIndexByte(k, '/'); i >= 0 && i < len(k)-1 {
			return k[i+1:]
		}
		return k
	case phone != nil:
		return *phone
	}
	return "Unknown"
}

// CheckPayload applies the rules of a log payload (a JSON object, as the document
// requires) that the document cannot state: at most MaxPayloadBytes as sent
// (ErrPayloadTooBig), every number within the range of a float64 (so that any client can
// read it back), and storable as jsonb. It returns the payload as stored (see
// CanonicalPayload).
func CheckPayload(raw []byte) ([]byte, error) {
	if len(raw) > MaxPayloadBytes {
		return nil, ErrPayloadTooBig
	}
	v, err := decodePayload(raw)
	if err != nil {
		return nil, err
	}
	if n := hugeNumber(v); n != "" {
		return nil, fmt.Errorf("the number %.40s is beyond the range of a float64", n)
	}
	return encodePayload(v)
}

// hugeNumber returns the first number in v that a float64 cannot hold ("" when none).
func hugeNumber(v any) string {
	switch x := v.(type) {
	case json.Number:
		if _, err := strconv.ParseFloat(string(x), 64); err != nil {
			return string(x)
		}
	case map[string]any:
		for _, e := range x {
			if n := hugeNumber(e); n != "" {
				return n
			}
		}
	case []any:
		for _, e := range x {
			if n := hugeNumber(e); n != "" {
				return n
			}
		}
	}
	return ""
}

// CanonicalPayload re-encodes a log payload (a JSON object) as PostgreSQL's jsonb takes
// it: numbers stay exactly as sent, while invalid UTF-8 and unpaired surrogate escapes
// (which jsonb refuses) become U+FFFD, as everywhere else in a request body.
func CanonicalPayload(raw []byte) ([]byte, error) {
	v, err := decodePayload(raw)
	if err != nil {
		return nil, err
	}
	return encodePayload(v)
}

// decodePayload decodes a log payload (a JSON object) with its numbers as written
// (json.Number).
func decodePayload(raw []byte) (map[string]any, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v map[string]any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if v == nil {
		return nil, errors.New("expected object, received null")
	}
	return v, nil
}

func encodePayload(v map[string]any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}
