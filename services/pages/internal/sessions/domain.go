package sessions

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/customerapi/platform/services/pages/internal/domain"
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
	ErrPageNotFound     = domain.ErrPageNotFound // the pages core's errors: one set for the service
	ErrAudienceNotFound = domain.ErrAudienceNotFound
	ErrSessionNotFound  = errors.New("audience session not found")
	ErrReplayConflict   = errors.New("analyticsSessionId already recorded with a different body")
	ErrEndBeforeStart   = errors.New("endDate must not be before startDate")
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

// The rules of a session to record and of a list's filter that the OpenAPI document
// cannot state (it states them in words): they hold across fields, or measure what a
// schema cannot. The document has judged everything else before a handler runs.

// Problem is a rule a session to record breaks, at its place in the request body.
type Problem struct {
	Code, Message string
	Path          []any
}

// The range of a client-sent session timestamp: a visit recorded by this API happened
// after 1970, and a later year than 9999 has no four-digit RFC 3339 form (an offset such
// as 9999-12-31T23:59:59-23:59 would turn into year 10000 in UTC).
var (
	MinTime = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)
	MaxTime = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
)

func inTimeRange(t time.Time) bool { return !t.Before(MinTime) && !t.After(MaxTime) }

// MaxFieldsDepth bounds how deeply formSubmission.fields may nest objects and arrays
// (the top-level object is level 1), so the payload stays decodable by every consumer.
const MaxFieldsDepth = 8

// MaxFieldsBytes bounds formSubmission.fields, measured as compact JSON in UTF-8, as a
// client measures it. form.submitted carries the fields, with '<', '>' and '&' escaped
// (six bytes each), so the bound keeps that event well under the producer's limit of
// KAFKA_MAX_MESSAGE_BYTES (default 1,000,000) even in the worst case (about 400 kB).
const MaxFieldsBytes = 64 << 10

// Check returns the rules s breaks: its end is not before its start, and both lie from
// MinTime to MaxTime in UTC; a form submission has an identifier (email, phone or LinkedIn
// profile URL), a LinkedIn URL that names a profile, and fields at most MaxFieldsDepth
// levels deep and MaxFieldsBytes long.
func (s *Session) Check() []Problem {
	var out []Problem
	fail := func(code, msg string, path ...any) {
		out = append(out, Problem{Code: code, Message: msg, Path: path})
	}
	if s.EndedAt != nil && s.EndedAt.Before(s.StartedAt) {
		fail("custom", "sessionEndedAt must not be before sessionStartedAt", "sessionEndedAt")
	}
	for _, f := range []struct {
		name string
		t    *time.Time
	}{{"sessionStartedAt", &s.StartedAt}, {"sessionEndedAt", s.EndedAt}} {
		if f.t != nil && !inTimeRange(*f.t) {
			fail("invalid_date", "Invalid date: "+f.name+" must be from "+MinTime.Format(time.RFC3339)+" to "+
				MaxTime.Format(time.RFC3339)+" (in UTC)", f.name)
		}
	}
	if f := s.Form; f != nil {
		if d := depth(f.Fields); d > MaxFieldsDepth {
			fail("too_big", "formSubmission.fields may nest objects and arrays at most "+strconv.Itoa(MaxFieldsDepth)+" levels deep",
				"formSubmission", "fields")
		} else if n := jsonSize(f.Fields); n > MaxFieldsBytes {
			fail("too_big", "formSubmission.fields may be at most "+strconv.Itoa(MaxFieldsBytes)+" bytes as JSON, got "+
				strconv.Itoa(n), "formSubmission", "fields")
		}
		if f.Email == nil && f.Phone == nil && f.LinkedInURL == nil {
			fail("custom", "A form submission needs at least one identifier: email, phone or linkedinProfileUrl", "formSubmission")
		}
		if u := f.LinkedInURL; u != nil && !ValidLinkedIn(*u) {
			fail("invalid_string", "Invalid LinkedIn profile URL: expected https://www.linkedin.com/in/<profile>",
				"formSubmission", "linkedinProfileUrl")
		}
	}
	return out
}

// Check reports ErrEndBeforeStart when the filter's end is before its start.
func (f Filter) Check() error {
	if f.Start != nil && f.End != nil && f.End.Before(*f.Start) {
		return ErrEndBeforeStart
	}
	return nil
}

// jsonSize is the length of v as compact JSON without HTML escaping.
func jsonSize(v any) int {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return 0 // decoded from JSON, so it encodes; the outbox measures the event anyway
	}
	return b.Len() - 1 // Encode ends with a newline
}

// depth is the nesting depth of a decoded JSON value (a scalar is 0).
func depth(v any) int {
	d := 0
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			d = max(d, depth(e))
		}
		return d + 1
	case []any:
		for _, e := range x {
			d = max(d, depth(e))
		}
		return d + 1
	}
	return 0
}
