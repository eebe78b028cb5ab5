package session

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"
)

// The rules of a session to record that the OpenAPI document cannot state (it states
// them in words): they hold across fields, or measure what a schema cannot. The document
// has judged everything else before a handler runs.

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

func inTimeRange(t time.Time) bool {
	return !t.Before(MinTime) && !t.After(MaxTime)
}

// MaxFieldsDepth bounds how deeply formSubmission.fields may nest objects and arrays
// (the top-level object is level 1), so the payload stays decodable by every consumer.
const MaxFieldsDepth = 8

// MaxFieldsBytes bounds formSubmission.fields, measured as compact JSON in UTF-8, as a
// client measures it. form.submitted carries the fields, with '<', '>' and '&' escaped
// (six bytes each), so the bound keeps that event well under the producer's limit of
// KAFKA_MAX_MESSAGE_BYTES (default 1,000,000) even in the worst case (about 400 kB).
const MaxFieldsBytes = 64 << 10

// Check returns the rules s breaks: its end is not before its start, and both lie from
// MinTime to MaxTime in UTC; a form submission has an identifier (email,
// phone or LinkedIn profile URL), a LinkedIn URL that names a profile, and fields at most
// MaxFieldsDepth levels deep and MaxFieldsBytes long.
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
