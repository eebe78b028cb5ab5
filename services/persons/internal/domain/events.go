package domain

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/customerapi/platform/libs/events"
)

// FormSubmitted is the payload of a form.submitted event (events.FormSubmitted, the
// shape the pages service writes) with the enrichment's rules. It is read tolerantly:
// the LinkedIn URL may come as linkedinProfileUrl or linkedinUrl, and identifierType as
// email, phone or tel, linkedin or linkedin_url.
type FormSubmitted events.FormSubmitted

// Submission is one form.submitted event to enrich.
type Submission struct {
	TenantID string
	EventID  string
	Form     FormSubmitted
	// NewPersonID is the ID of the person created when none matches.
	NewPersonID string
	Now         time.Time
}

// ParseFormSubmitted decodes a form.submitted payload.
func ParseFormSubmitted(b []byte) (FormSubmitted, error) {
	var f FormSubmitted
	err := json.Unmarshal(b, &f)
	return f, err
}

// Identifier kinds the enrichment matches persons by.
const (
	KindEmail    = "email"
	KindPhone    = "phone"
	KindLinkedin = "linkedin"
)

// Failure reasons of form.enrichment_failed.
const (
	ReasonNoIdentifier      = "no_identifier"
	ReasonInvalidIdentifier = "invalid_identifier"
)

// Submitted is what a form submission says about a person, validated.
type Submitted struct {
	// Kind and Key name the identifier to match on (Key is normalised).
	Kind, Key string
	Name      *string
	Email     *string
	Phone     *string
	Linkedin  *string
}

// EnrichmentError is why a submission cannot be enriched.
type EnrichmentError struct {
	Reason string
	Detail string
}

// Error implements error.
func (e *EnrichmentError) Error() string { return e.Reason + ": " + e.Detail }

// clean trims a submitted value and drops what PostgreSQL cannot store (NUL, invalid
// UTF-8); blank is nil.
func clean(s *string) *string {
	if s == nil {
		return nil
	}
	v := strings.TrimSpace(strings.ToValidUTF8(strings.ReplaceAll(*s, "\x00", ""), ""))
	if v == "" {
		return nil
	}
	return &v
}

// Validate picks the identifier to match on and checks every submitted identifier.
func (f FormSubmitted) Validate() (Submitted, *EnrichmentError) {
	s := Submitted{Name: clean(f.Name), Email: clean(f.Email), Phone: clean(f.Phone), Linkedin: clean(f.LinkedinProfileURL)}
	if s.Linkedin == nil {
		s.Linkedin = clean(f.LinkedinURL)
	}
	ident := clean(&f.Identifier)
	kind := ""
	switch strings.ToLower(f.IdentifierType) {
	case "email":
		kind = KindEmail
		if s.Email == nil {
			s.Email = ident
		}
	case "phone", "tel":
		kind = KindPhone
		if s.Phone == nil {
			s.Phone = ident
		}
	case "linkedin", "linkedin_url":
		kind = KindLinkedin
		if s.Linkedin == nil {
			s.Linkedin = ident
		}
	}
	if s.Name != nil {
		if r := []rune(*s.Name); len(r) > MaxNameLen {
			n := string(r[:MaxNameLen])
			s.Name = &n
		}
	}
	if s.Email != nil && (!ValidEmail(*s.Email) || len(*s.Email) > MaxEmailLen) {
		return s, &EnrichmentError{ReasonInvalidIdentifier, "the email is not a valid address"}
	}
	if s.Phone != nil && !ValidPhone(*s.Phone) {
		return s, &EnrichmentError{ReasonInvalidIdentifier, "the phone number is not valid"}
	}
	if s.Linkedin != nil && (!validURL(*s.Linkedin) || len(*s.Linkedin) > MaxURLLen) {
		return s, &EnrichmentError{ReasonInvalidIdentifier, "the LinkedIn URL is not an http(s) URL"}
	}
	if kind == "" { // no or an unknown type: the first identifier present
		switch {
		case s.Email != nil:
			kind = KindEmail
		case s.Linkedin != nil:
			kind = KindLinkedin
		case s.Phone != nil:
			kind = KindPhone
		}
	}
	switch kind {
	case KindEmail:
		if s.Email != nil {
			s.Kind, s.Key = kind, EmailKey(*s.Email)
		}
	case KindPhone:
		if s.Phone != nil {
			s.Kind, s.Key = kind, PhoneKey(*s.Phone)
		}
	case KindLinkedin:
		if s.Linkedin != nil {
			s.Kind, s.Key = kind, LinkedinKey(*s.Linkedin)
		}
	}
	if s.Key == "" {
		return s, &EnrichmentError{ReasonNoIdentifier, "the submission has no email, phone or LinkedIn URL to match a person by"}
	}
	return s, nil
}

func validURL(s string) bool {
	l := strings.ToLower(s)
	return (strings.HasPrefix(l, "https://") || strings.HasPrefix(l, "http://")) && len(LinkedinKey(s)) > 0 &&
		!strings.ContainsAny(s, " \t\r\n")
}

// Outcomes of an enrichment, as form.enriched reports them.
const (
	PersonMatched = "matched"
	PersonCreated = "created"
	AccountLinked = "linked"
	AccountNone   = "none"
)

// FormEnriched is the payload of form.enriched (FormEnrichedEventPayload).
type FormEnriched struct {
	Type              string  `json:"type"`
	FormSubmissionID  string  `json:"formSubmissionId"`
	AudienceSessionID string  `json:"audienceSessionId"`
	PageID            string  `json:"pageId"`
	PersonID          string  `json:"personId"`
	AccountID         *string `json:"accountId"`
	Person            string  `json:"person"`
	Account           string  `json:"account"`
	MatchedBy         string  `json:"matchedBy"`
}

// FormEnrichmentFailed is the payload of form.enrichment_failed
// (FormEnrichmentFailedEventPayload).
type FormEnrichmentFailed struct {
	Type              string `json:"type"`
	FormSubmissionID  string `json:"formSubmissionId"`
	AudienceSessionID string `json:"audienceSessionId"`
	PageID            string `json:"pageId"`
	Reason            string `json:"reason"`
	Detail            string `json:"detail"`
}
