package domain

import (
	"testing"
	"time"
)

func str(s string) *string { return &s }

func TestEnrichPersonFillsWhatIsMissingAndNeverOverwrites(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	in := Submission{TenantID: "acme", NewPersonID: "person_new", Now: now}
	known := Person{ID: "person_1", TenantID: "acme", Name: "Ada", Email: str("ada@old.example"), UpdatedAt: now.Add(-time.Hour)}
	tests := []struct {
		name        string
		matched     *Person
		sub         Submitted
		wantOutcome string
		wantChanged bool
		check       func(Person) string // the broken rule, or ""
	}{
		{"a match keeps its email and gains the phone it lacked", &known,
			Submitted{Kind: KindEmail, Email: str("ada@new.example"), Phone: str("+15551234567")}, PersonMatched, true,
			func(p Person) string {
				if *p.Email != "ada@old.example" {
					return "an identifier the person has must never be overwritten"
				}
				if p.PhoneNumber == nil || *p.PhoneNumber != "+15551234567" || !p.UpdatedAt.Equal(now) {
					return "an identifier the person lacks is filled, and the person is updated now"
				}
				return ""
			}},
		{"a match that lacks nothing is not changed", &known,
			Submitted{Kind: KindEmail, Email: str("ada@old.example")}, PersonMatched, false,
			func(p Person) string {
				if !p.UpdatedAt.Equal(known.UpdatedAt) {
					return "a person the submission adds nothing to keeps its updatedAt"
				}
				return ""
			}},
		{"no match creates a person named as submitted, with the email's domain", nil,
			Submitted{Kind: KindEmail, Email: str("grace@navy.example"), Name: str("Grace")}, PersonCreated, true,
			func(p Person) string {
				if p.ID != "person_new" || p.TenantID != "acme" || p.Name != "Grace" || p.Domain == nil || *p.Domain != "navy.example" {
					return "a created person takes the new ID, the tenant, the submitted name and the email's domain"
				}
				return ""
			}},
		{"no match and no name: the name comes from the identifier", nil,
			Submitted{Kind: KindEmail, Email: str("grace@navy.example")}, PersonCreated, true,
			func(p Person) string {
				if p.Name != NameFromIdentifier(str("grace@navy.example"), nil, nil) || p.Name == "" {
					return "a created person without a submitted name is named from its identifier"
				}
				return ""
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before Person
			if tt.matched != nil {
				before = *tt.matched
			}
			p, outcome, changed := EnrichPerson(tt.matched, tt.sub, in)
			if outcome != tt.wantOutcome || changed != tt.wantChanged {
				t.Fatalf("outcome %q changed %v, want %q %v", outcome, changed, tt.wantOutcome, tt.wantChanged)
			}
			if broken := tt.check(p); broken != "" {
				t.Fatalf("%s: got %+v", broken, p)
			}
			if tt.matched != nil && *tt.matched.Email != *before.Email {
				t.Fatal("EnrichPerson changed the matched person it was given instead of a copy")
			}
		})
	}
}

func TestEnrichedEventSaysWhetherAnAccountWasLinked(t *testing.T) {
	f := FormSubmitted{FormSubmissionID: "form_1", AudienceSessionID: "as_1", PageID: "page_1"}
	p := Person{ID: "person_1"}
	for _, tt := range []struct {
		account *string
		want    string
	}{{nil, AccountNone}, {str("account_1"), AccountLinked}} {
		e := Enriched(f, p, PersonMatched, tt.account, KindEmail)
		payload := e.Payload.(FormEnriched)
		if e.Subject != "form_1" || payload.Account != tt.want || payload.PersonID != "person_1" {
			t.Fatalf("form.enriched must be about the submission and say account %q: %+v", tt.want, e)
		}
	}
	failed := EnrichmentFailed(f, &EnrichmentError{ReasonNoIdentifier, "none"})
	if failed.Subject != "form_1" || failed.Payload.(FormEnrichmentFailed).Reason != ReasonNoIdentifier {
		t.Fatalf("form.enrichment_failed must be about the submission and carry the reason: %+v", failed)
	}
}
