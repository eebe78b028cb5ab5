package session

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/customerapi/platform/libs/events"
)

func TestIdentify(t *testing.T) {
	s := func(v string) *string { return &v }
	for _, tc := range []struct {
		f          FormSubmission
		ident, typ string
		ok         bool
	}{
		{FormSubmission{Email: s(" Ann@Example.COM "), Phone: s("+1 555 010 9999")}, "ann@example.com", IdentifierEmail, true},
		{FormSubmission{LinkedInURL: s("http://uk.linkedin.com/in/Ann-Lee/details?x=1"), Phone: s("555 0109")}, "https://www.linkedin.com/in/ann-lee", IdentifierLinkedIn, true},
		{FormSubmission{Phone: s("+1 (555) 010-9999")}, "+15550109999", IdentifierTel, true},
		{FormSubmission{Name: s("Ann")}, "", "", false},
	} {
		ident, typ, ok := Identify(tc.f)
		if ident != tc.ident || typ != tc.typ || ok != tc.ok {
			t.Errorf("%+v: got %q %q %v", tc.f, ident, typ, ok)
		}
	}
}

// The phone's format is the document's pattern (TestBadInput tries it); the LinkedIn
// profile URL is checked here, as its normalisation reads it.
func TestValidators(t *testing.T) {
	for u, want := range map[string]bool{"https://www.linkedin.com/in/ann": true, "https://linkedin.com/in/ann/": true,
		"https://www.linkedin.com/company/acme": false, "https://evil-linkedin.com/in/ann": false,
		"ftp://linkedin.com/in/ann": false, "linkedin.com/in/ann": false, "https://www.linkedin.com/in/": false} {
		if ValidLinkedIn(u) != want {
			t.Errorf("ValidLinkedIn(%q) != %v", u, want)
		}
	}
}

func TestSessionCheck(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := func(v string) *string { return &v }
	before, after := at.Add(-time.Second), at.Add(time.Second)
	late := MaxTime.Add(time.Second)
	deep := map[string]any{"a": []any{map[string]any{"b": []any{map[string]any{"c": []any{map[string]any{"d": []any{map[string]any{"e": 1}}}}}}}}}
	for name, tc := range map[string]struct {
		s    Session
		want string // the problems as code:path
	}{
		"plain":                 {Session{StartedAt: at, EndedAt: &after}, "[]"},
		"end before start":      {Session{StartedAt: at, EndedAt: &before}, "[custom:[sessionEndedAt]]"},
		"before 1970":           {Session{StartedAt: MinTime.Add(-time.Millisecond)}, "[invalid_date:[sessionStartedAt]]"},
		"after 9999":            {Session{StartedAt: at, EndedAt: &late}, "[invalid_date:[sessionEndedAt]]"},
		"form without identity": {Session{StartedAt: at, Form: &FormSubmission{Name: s("Ann")}}, "[custom:[formSubmission]]"},
		"form with a phone":     {Session{StartedAt: at, Form: &FormSubmission{Phone: s("+1 555 010 9999")}}, "[]"},
		"not a profile":         {Session{StartedAt: at, Form: &FormSubmission{LinkedInURL: s("https://linkedin.com/company/x")}}, "[invalid_string:[formSubmission linkedinProfileUrl]]"},
		"fields too deep":       {Session{StartedAt: at, Form: &FormSubmission{Email: s("a@b.co"), Fields: deep}}, "[too_big:[formSubmission fields]]"},
	} {
		var got []string
		for _, p := range tc.s.Check() {
			got = append(got, fmt.Sprintf("%s:%v", p.Code, p.Path))
		}
		if fmt.Sprint(got) != tc.want && (len(got) != 0 || tc.want != "[]") {
			t.Errorf("%s: %v, want %s", name, got, tc.want)
		}
	}
	if err := (Filter{Start: &at, End: &before}).Check(); !errors.Is(err, ErrEndBeforeStart) {
		t.Errorf("filter end before start: %v", err)
	}
	if err := (Filter{Start: &at, End: &at}).Check(); err != nil {
		t.Errorf("filter of one instant: %v", err)
	}
}

func TestSessionCompute(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	end := func(d time.Duration) *time.Time { e := at.Add(d); return &e }
	m := Metrics{BounceThreshold: 10 * time.Second, MaxDuration: time.Hour}
	for name, tc := range map[string]struct {
		s      Session
		status string
		bounce bool
		spent  float64 // -1: unknown
	}{
		"bounce":          {Session{StartedAt: at, EndedAt: end(9 * time.Second)}, ComputationCompleted, true, 9},
		"at threshold":    {Session{StartedAt: at, EndedAt: end(10 * time.Second)}, ComputationCompleted, false, 10},
		"no end":          {Session{StartedAt: at}, ComputationCompleted, true, -1},
		"question":        {Session{StartedAt: at, QuestionsAsked: 1}, ComputationCompleted, false, -1},
		"form":            {Session{StartedAt: at, Form: &FormSubmission{}}, ComputationCompleted, false, -1},
		"too long":        {Session{StartedAt: at, EndedAt: end(2 * time.Hour)}, ComputationFailed, false, -1},
		"ends before":     {Session{StartedAt: at, EndedAt: end(-time.Second)}, ComputationFailed, false, -1},
		"exactly maximum": {Session{StartedAt: at, EndedAt: end(time.Hour)}, ComputationCompleted, false, 3600},
	} {
		r := m.Compute(tc.s)
		spent := -1.0
		if r.TimeSpentSeconds != nil {
			spent = *r.TimeSpentSeconds
		}
		if r.Status != tc.status || r.IsBounce != tc.bounce || spent != tc.spent || (r.Status == ComputationFailed) != (r.Error != nil) {
			t.Errorf("%s: %+v (spent %v)", name, r, spent)
		}
	}
}

// form.submitted is keyed by the session's audience, or by its page when it has none.
func TestFormSubmitted(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	audience, email := "audience_1", "ann@example.com"
	s := Session{TenantID: "acme", ID: "session_1", PageID: "page_1", AudienceID: &audience,
		Form: &FormSubmission{ID: "formsub_1", Email: &email, Identifier: email, IdentifierType: IdentifierEmail, SubmittedAt: at}}
	e := FormSubmitted(&s)
	p, ok := e.Payload.(events.FormSubmitted)
	if e.Type != events.TypeFormSubmitted || e.Subject != audience || !ok || p.Type != events.TypeFormSubmitted ||
		p.AudienceSessionID != "session_1" || p.FormSubmissionID != "formsub_1" || p.Identifier != email ||
		p.PageID != "page_1" || p.SubmittedAt != "2026-01-01T00:00:00.000Z" {
		t.Fatalf("event = %+v", e)
	}
	s.AudienceID = nil
	if e := FormSubmitted(&s); e.Subject != "page_1" {
		t.Fatalf("without an audience the subject is %q, want the page", e.Subject)
	}
}
