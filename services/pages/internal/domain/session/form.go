package session

import (
	"net/url"
	"strings"
	"time"
)

// Identifier types of a form submission, as the specification names them.
const (
	IdentifierEmail    = "email"
	IdentifierLinkedIn = "linkedin"
	IdentifierTel      = "tel"
)

// FormSubmission is what a visitor submitted in a form during a session.
type FormSubmission struct {
	ID          string
	Email       *string
	Phone       *string
	LinkedInURL *string
	Name        *string
	Fields      map[string]any
	// Identifier and IdentifierType name the value persons matches on: the email, else
	// the LinkedIn profile URL, else the phone number, normalised.
	Identifier     string
	IdentifierType string
	SubmittedAt    time.Time
}

// Identify picks the identifier of a submission (email first, then LinkedIn profile URL,
// then phone) and normalises it so that persons can match it exactly: emails lower-case;
// LinkedIn URLs as https://www.linkedin.com/in/<slug> in lower case; phones as digits
// with an optional leading +. ok is false when the submission holds no identifier.
func Identify(f FormSubmission) (identifier, typ string, ok bool) {
	if f.Email != nil && strings.TrimSpace(*f.Email) != "" {
		return strings.ToLower(strings.TrimSpace(*f.Email)), IdentifierEmail, true
	}
	if f.LinkedInURL != nil && strings.TrimSpace(*f.LinkedInURL) != "" {
		return NormaliseLinkedIn(*f.LinkedInURL), IdentifierLinkedIn, true
	}
	if f.Phone != nil && strings.TrimSpace(*f.Phone) != "" {
		return NormalisePhone(*f.Phone), IdentifierTel, true
	}
	return "", "", false
}

// NormalisePhone keeps the digits of a phone number and a leading +.
func NormalisePhone(p string) string {
	p = strings.TrimSpace(p)
	var b strings.Builder
	for i, r := range p {
		if r == '+' && i == 0 {
			b.WriteRune(r)
		}
		if r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// linkedInSlug returns the profile slug of a LinkedIn profile URL
// (http(s)://[www.|xx.]linkedin.com/in/<slug>[/...]), or "".
func linkedInSlug(raw string) string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") {
		return ""
	}
	host := strings.ToLower(u.Hostname())
	if host != "linkedin.com" && !strings.HasSuffix(host, ".linkedin.com") {
		return ""
	}
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	if len(parts) < 2 || parts[0] != "in" || parts[1] == "" {
		return ""
	}
	return strings.ToLower(parts[1])
}

// ValidLinkedIn reports whether raw is a LinkedIn profile URL.
func ValidLinkedIn(raw string) bool { return linkedInSlug(raw) != "" }

// NormaliseLinkedIn returns the canonical form of a LinkedIn profile URL.
func NormaliseLinkedIn(raw string) string {
	if slug := linkedInSlug(raw); slug != "" {
		return "https://www.linkedin.com/in/" + slug
	}
	return strings.TrimSpace(raw)
}
