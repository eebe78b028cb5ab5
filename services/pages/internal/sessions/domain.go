package sessions

import (
	"errors"
	"net/url"
	"strings"
	"time"
)

// Computation states of a session's derived metrics.
const (
	StatusPending   = "pending"
	StatusCompleted = "completed"
	StatusFailed    = "failed"
)

// Identifier types of a form submission, as the specification names them.
const (
	IdentifierEmail    = "email"
	IdentifierLinkedIn = "linkedin"
	IdentifierTel      = "tel"
)

// Errors the use cases report; the HTTP layer maps them.
var (
	ErrPageNotFound     = errors.New("page not found")
	ErrAudienceNotFound = errors.New("audience not found")
	ErrSessionNotFound  = errors.New("audience session not found")
	ErrReplayConflict   = errors.New("analyticsSessionId already recorded with a different body")
)

// FormSubmission is what a visitor submitted in a form during the session.
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

// Session is one recorded visit to a page (and usually one of its audiences).
type Session struct {
	TenantID           string
	ID                 string
	PageID             string
	AudienceID         *string
	AnalyticsSessionID string
	RequestHash        []byte
	PageTitle          *string
	PageURL            *string
	StartedAt          time.Time
	EndedAt            *time.Time
	HasConversion      bool
	MaxScrollDepth     *float64
	QuestionsAsked     int64
	TotalClicks        int64
	UTM                UTM
	Form               *FormSubmission
	// Derived by the computation.
	ComputationStatus string
	ComputationError  *string
	IsBounce          bool
	TimeSpentSeconds  *float64
	CreatedAt         time.Time
}

// UTM holds the campaign parameters of the visit.
type UTM struct {
	Campaign, Content, Medium, Source, Term *string
}

// Metrics are the settings of the derived-metrics computation.
type Metrics struct {
	// BounceThreshold: a session without any interaction that lasted less than this
	// (or has no end) is a bounce.
	BounceThreshold time.Duration
	// MaxDuration: a session longer than this cannot be measured (a tab left open, a
	// clock gone wrong); its computation fails.
	MaxDuration time.Duration
}

// DefaultMetrics are the documented defaults.
var DefaultMetrics = Metrics{BounceThreshold: 10 * time.Second, MaxDuration: 24 * time.Hour}

// Result is the outcome of computing a session's metrics.
type Result struct {
	Status           string
	Error            *string
	IsBounce         bool
	TimeSpentSeconds *float64
	HasConversion    bool
}

// Compute derives a session's metrics: the time spent is the span from start to end
// (unknown without an end); a bounce is a session with no interaction at all (no click,
// question, form submission or conversion) that ended within the bounce threshold or
// never reported an end. A form submission counts as a conversion.
func (m Metrics) Compute(s Session) Result {
	r := Result{Status: StatusCompleted, HasConversion: s.HasConversion || s.Form != nil}
	if s.EndedAt != nil {
		d := s.EndedAt.Sub(s.StartedAt)
		if d < 0 || d > m.MaxDuration {
			msg := "the session lasted longer than " + m.MaxDuration.String() + "; its time spent cannot be measured"
			if d < 0 {
				msg = "the session ended before it started"
			}
			return Result{Status: StatusFailed, Error: &msg, HasConversion: r.HasConversion}
		}
		secs := d.Seconds()
		r.TimeSpentSeconds = &secs
	}
	interacted := s.TotalClicks > 0 || s.QuestionsAsked > 0 || r.HasConversion
	short := s.EndedAt == nil || s.EndedAt.Sub(s.StartedAt) < m.BounceThreshold
	r.IsBounce = !interacted && short
	return r
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

// ValidPhone reports whether p looks like a phone number: digits, spaces and + - ( ) .
// only, with 7 to 15 digits (E.164 allows at most 15).
func ValidPhone(p string) bool {
	digits := 0
	for i, r := range p {
		switch {
		case r >= '0' && r <= '9':
			digits++
		case r == '+' && i == 0, r == ' ', r == '-', r == '(', r == ')', r == '.':
		default:
			return false
		}
	}
	return digits >= 7 && digits <= 15
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
