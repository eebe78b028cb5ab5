package application_test

import (
	"context"
	"testing"
	"time"

	"github.com/customerapi/platform/libs/events"
)

func TestFormEnrichment(t *testing.T) {
	s := start(t)
	c := client(t, s, "acme")
	acc := createAccount(t, c, map[string]any{"domain": "buyer.example"})
	reader := newEventReader(t, s.Broker)

	// A new email: a person is created and linked to the account of its domain.
	first := formSubmitted(t, "acme", "form_1", map[string]any{"identifier": "Jane@Buyer.example", "email": "Jane@Buyer.example",
		"name": "Jane Buyer"})
	publish(t, s.Broker, first)
	e := reader.next(t, 30*time.Second)
	p := payload(t, e)
	if e.Type != events.TypeFormEnriched || e.TenantID != "acme" || e.Subject != "form_1" || p["type"] != "form.enriched" ||
		p["formSubmissionId"] != "form_1" || p["audienceSessionId"] != "session_form_1" || p["pageId"] != "page_1" ||
		p["person"] != "created" || p["account"] != "linked" || p["accountId"] != acc["accountId"] || p["matchedBy"] != "email" {
		t.Fatalf("form.enriched = %+v %v", e, p)
	}
	personID := p["personId"].(string)
	person := mustStatus(t, c.Do("GET", "/v0/persons/"+personID, nil), 200)
	if person["name"] != "Jane Buyer" || person["email"] != "Jane@Buyer.example" || person["domain"] != "buyer.example" {
		t.Fatalf("person = %v", person)
	}
	if got := mustStatus(t, c.Do("GET", "/v0/accounts/"+acc["accountId"].(string), nil), 200); len(got["linkedPersons"].([]any)) != 1 {
		t.Fatalf("account = %v", got)
	}

	// Redelivery of the same event, and a re-emission of the same submission under a new
	// event ID, change nothing and emit nothing.
	again := formSubmitted(t, "acme", "form_1", map[string]any{"identifier": "jane@buyer.example", "email": "jane@buyer.example"})
	publish(t, s.Broker, first, again)

	// The same email in another casing, with a phone: the person matches and gains the phone.
	second := formSubmitted(t, "acme", "form_2", map[string]any{"identifier": "JANE@buyer.example", "email": "JANE@buyer.example",
		"phone": "+1 555 0100"})
	publish(t, s.Broker, second)
	e = reader.next(t, 30*time.Second)
	p = payload(t, e)
	if p["formSubmissionId"] != "form_2" || p["person"] != "matched" || p["personId"] != personID {
		t.Fatalf("second = %v (the redelivered first must emit nothing)", p)
	}
	if got := mustStatus(t, c.Do("GET", "/v0/persons/"+personID, nil), 200); got["phoneNumber"] != "+1 555 0100" || got["email"] != "Jane@Buyer.example" {
		t.Fatalf("enriched person = %v", got)
	}

	// The pages producer's alternative shape: identifierType linkedin_url and linkedinUrl;
	// no email, so no domain and no account.
	third := formSubmittedRaw(t, "acme", map[string]any{"type": "form.submitted", "pageId": "page_1", "audienceId": nil,
		"audienceSessionId": "session_3", "formSubmissionId": "form_3", "identifier": "https://www.linkedin.com/in/someone/",
		"identifierType": "linkedin_url", "email": nil, "phone": nil, "linkedinUrl": "https://www.linkedin.com/in/someone/",
		"submittedAt": "2026-11-23T10:00:00.000Z"})
	publish(t, s.Broker, third)
	p = payload(t, reader.next(t, 30*time.Second))
	if p["person"] != "created" || p["account"] != "none" || p["accountId"] != nil || p["matchedBy"] != "linkedin" {
		t.Fatalf("linkedin = %v", p)
	}
	li := mustStatus(t, c.Do("GET", "/v0/persons/"+p["personId"].(string), nil), 200)
	if li["name"] != "someone" || li["linkedinProfileUrl"] != "https://www.linkedin.com/in/someone/" || li["domain"] != nil {
		t.Fatalf("linkedin person = %v", li)
	}

	// No identifier, or an invalid one: form.enrichment_failed with a reason code.
	publish(t, s.Broker, formSubmitted(t, "acme", "form_4", nil))
	p = payload(t, reader.next(t, 30*time.Second))
	if p["type"] != "form.enrichment_failed" || p["formSubmissionId"] != "form_4" || p["reason"] != "no_identifier" || p["detail"] == "" {
		t.Fatalf("failed = %v", p)
	}
	publish(t, s.Broker, formSubmitted(t, "acme", "form_5", map[string]any{"identifier": "nope", "email": "nope"}))
	p = payload(t, reader.next(t, 30*time.Second))
	if p["type"] != "form.enrichment_failed" || p["reason"] != "invalid_identifier" {
		t.Fatalf("failed = %v", p)
	}
	// A payload with no form submission ID cannot be answered: it is dead-lettered.
	publish(t, s.Broker, formSubmittedRaw(t, "acme", map[string]any{"type": "form.submitted", "email": "x@y.example"}))
	deadline := time.Now().Add(20 * time.Second)
	for {
		var n int
		if err := s.Runtime.Pool.QueryRow(context.Background(), "SELECT count(*) FROM inbox_dead_letters").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d dead letters", n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Nothing more was emitted, and only two persons exist.
	if e, err := reader.try(2 * time.Second); err == nil {
		t.Fatalf("unexpected event %+v %s", e, e.Payload)
	}
	if n := mustStatus(t, c.Do("GET", "/v0/persons/search", nil), 200)["totalCount"]; n != 2.0 {
		t.Fatalf("%v persons", n)
	}
}

// formSubmittedRaw makes a form.submitted envelope with exactly the given payload.
func formSubmittedRaw(t *testing.T, tenantID string, p map[string]any) events.Envelope {
	t.Helper()
	e, err := events.New(tenantID, events.TypeFormSubmitted, "audience_1", p)
	if err != nil {
		t.Fatal(err)
	}
	return e
}
