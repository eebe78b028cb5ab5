package application_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/libs/testwait"
)

func TestFormEnrichment(t *testing.T) {
	s := start(t)
	c := client(t, s, "acme")
	acc := createAccount(t, c, accountCreate{Domain: "buyer.example"})
	reader := newEventReader(t, s.Broker)

	// A new email: a person is created and linked to the account of its domain.
	first := formSubmitted(t, "acme", "form_1", map[string]any{"identifier": "Jane@Buyer.example", "email": "Jane@Buyer.example",
		"name": "Jane Buyer"})
	publish(t, s.Broker, first)
	e := reader.next(t, 30*time.Second, "form.enriched of form_1")
	if e.Type != events.TypeFormEnriched || e.TenantID != "acme" || e.Subject != "form_1" {
		t.Fatalf("a submission with a new email must be answered with form.enriched of its tenant (acme) about the submission (form_1);"+
			" got %s of %q about %q", e.Type, e.TenantID, e.Subject)
	}
	p := payload[FormEnriched](t, e)
	if p.Type != "form.enriched" || p.FormSubmissionID != "form_1" || p.AudienceSessionID != "session_form_1" || p.PageID != "page_1" {
		t.Errorf("form.enriched must carry its type and the submission's formSubmissionId, audienceSessionId and pageId"+
			" (form.enriched, form_1, session_form_1, page_1); got %+v", p)
	}
	if p.Person != "created" || p.MatchedBy != "email" {
		t.Errorf("a submission with an email no person has must create a person, matched by email; got person %q, matchedBy %q",
			p.Person, p.MatchedBy)
	}
	if p.Account != "linked" || !is(p.AccountID, acc.AccountID) {
		t.Errorf("the new person must be linked to the account of its email's domain (%s); got account %q, accountId %s",
			acc.AccountID, p.Account, str(p.AccountID))
	}
	personID := p.PersonID
	person := getPerson(t, c, personID)
	if person.Name != "Jane Buyer" || !is(person.Email, "Jane@Buyer.example") || !is(person.Domain, "buyer.example") {
		t.Fatalf("the person created from a submission must have its name, its email as given and the email's domain"+
			" (Jane Buyer, Jane@Buyer.example, buyer.example); got %q, %s, %s", person.Name, str(person.Email), str(person.Domain))
	}
	if got := getAccount(t, c, acc.AccountID); len(got.LinkedPersons) != 1 {
		t.Fatalf("the account of the new person's domain must link it; it links %v", personIDs(got.LinkedPersons))
	}

	// Redelivery of the same event, and a re-emission of the same submission under a new
	// event ID, change nothing and emit nothing.
	again := formSubmitted(t, "acme", "form_1", map[string]any{"identifier": "jane@buyer.example", "email": "jane@buyer.example"})
	publish(t, s.Broker, first, again)

	// The same email in another casing, with a phone: the person matches and gains the phone.
	second := formSubmitted(t, "acme", "form_2", map[string]any{"identifier": "JANE@buyer.example", "email": "JANE@buyer.example",
		"phone": "+1 555 0100"})
	publish(t, s.Broker, second)
	p = payload[FormEnriched](t, reader.next(t, 30*time.Second, "form.enriched of form_2"))
	if p.FormSubmissionID != "form_2" {
		t.Fatalf("a redelivered or re-emitted submission (form_1) must emit nothing, so the next event must be about form_2; got %+v", p)
	}
	if p.Person != "matched" || p.PersonID != personID {
		t.Fatalf("an email that differs only in case must match the existing person (%s); got person %q, personId %q", personID, p.Person, p.PersonID)
	}
	if got := getPerson(t, c, personID); !is(got.PhoneNumber, "+1 555 0100") || !is(got.Email, "Jane@Buyer.example") {
		t.Fatalf("a matched person must gain the submission's phone (+1 555 0100) and keep its email (Jane@Buyer.example); got %s and %s",
			str(got.PhoneNumber), str(got.Email))
	}

	// The pages producer's alternative shape: identifierType linkedin_url and linkedinUrl;
	// no email, so no domain and no account.
	third := formSubmittedRaw(t, "acme", map[string]any{"type": "form.submitted", "pageId": "page_1", "audienceId": nil,
		"audienceSessionId": "session_3", "formSubmissionId": "form_3", "identifier": "https://www.linkedin.com/in/someone/",
		"identifierType": "linkedin_url", "email": nil, "phone": nil, "linkedinUrl": "https://www.linkedin.com/in/someone/",
		"submittedAt": "2026-11-23T10:00:00.000Z"})
	publish(t, s.Broker, third)
	p = payload[FormEnriched](t, reader.next(t, 30*time.Second, "form.enriched of form_3"))
	if p.Person != "created" || p.MatchedBy != "linkedin" {
		t.Fatalf("a submission with only a LinkedIn URL (linkedinUrl) must create a person matched by linkedin; got person %q, matchedBy %q",
			p.Person, p.MatchedBy)
	}
	if p.Account != "none" || p.AccountID != nil {
		t.Fatalf("a person without an email has no domain, so it must link no account (account none, accountId null); got %q, %s",
			p.Account, str(p.AccountID))
	}
	li := getPerson(t, c, p.PersonID)
	if li.Name != "someone" || !is(li.LinkedinProfileURL, "https://www.linkedin.com/in/someone/") || li.Domain != nil {
		t.Fatalf("a person created from a LinkedIn URL must be named after its profile (someone), keep the URL as given and have"+
			" domain null; got %q, %s, %s", li.Name, str(li.LinkedinProfileURL), str(li.Domain))
	}

	// No identifier, or an invalid one: form.enrichment_failed with a reason code.
	publish(t, s.Broker, formSubmitted(t, "acme", "form_4", nil))
	f := payload[FormEnrichmentFailed](t, reader.next(t, 30*time.Second, "form.enrichment_failed of form_4"))
	if f.Type != "form.enrichment_failed" || f.FormSubmissionID != "form_4" || f.Reason != "no_identifier" || f.Detail == "" {
		t.Fatalf("a submission without an identifier must be answered with form.enrichment_failed about it (form_4),"+
			" reason no_identifier and a detail; got %+v", f)
	}
	publish(t, s.Broker, formSubmitted(t, "acme", "form_5", map[string]any{"identifier": "nope", "email": "nope"}))
	f = payload[FormEnrichmentFailed](t, reader.next(t, 30*time.Second, "form.enrichment_failed of form_5"))
	if f.Type != "form.enrichment_failed" || f.Reason != "invalid_identifier" {
		t.Fatalf("a submission whose email is not an address must be answered with form.enrichment_failed, reason"+
			" invalid_identifier; got %+v", f)
	}
	// A payload with no form submission ID cannot be answered: it is dead-lettered.
	publish(t, s.Broker, formSubmittedRaw(t, "acme", map[string]any{"type": "form.submitted", "email": "x@y.example"}))
	testwait.For(t, 20*time.Second, "the submission without formSubmissionId in inbox_dead_letters", func() (bool, string) {
		var n int
		if err := s.Runtime.Pool.QueryRow(context.Background(), "SELECT count(*) FROM inbox_dead_letters").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 1, fmt.Sprintf("%d dead letters", n)
	})
	// Nothing more was emitted, and only two persons exist.
	if e, err := reader.try(2 * time.Second); err == nil {
		t.Fatalf("a dead-lettered submission must emit nothing; got %s %s", e.Type, e.Payload)
	}
	if n := searchPersons(t, c, "").total(); n != 2 {
		t.Fatalf("enrichment must have made two persons (Jane and someone), the failures and replays none; there are %d", n)
	}
}

// formSubmittedRaw makes a form.submitted envelope with exactly the given payload (a
// map: the shapes of other producers, and broken ones, on purpose).
func formSubmittedRaw(t *testing.T, tenantID string, p map[string]any) events.Envelope {
	t.Helper()
	e, err := events.New(tenantID, events.TypeFormSubmitted, "audience_1", p)
	if err != nil {
		t.Fatal(err)
	}
	return e
}
