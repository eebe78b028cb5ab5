package domain

import (
	"github.com/customerapi/platform/libs/events"
)

// OutcomeFailed is how a submission that could not be enriched is recorded (beside
// PersonMatched and PersonCreated).
const OutcomeFailed = "failed"

// Event is what a change announces (the platform's events.Announcement).
type Event = events.Announcement

// EnrichPerson is the enrichment rule. A person matched by the submitted identifier gets
// the identifiers it lacks, never overwritten (changed reports whether it got any); with
// no match, a new person is made from the submission: its name as submitted or derived
// from the identifier, its domain from the email. Outcome is PersonMatched or
// PersonCreated.
func EnrichPerson(matched *Person, sub Submitted, in Submission) (p Person, outcome string, changed bool) {
	if matched == nil {
		p = Person{ID: in.NewPersonID, TenantID: in.TenantID, Email: sub.Email, Domain: DomainFromEmail(sub.Email),
			PhoneNumber: sub.Phone, LinkedinProfileURL: sub.Linkedin, CreatedAt: in.Now, UpdatedAt: in.Now}
		p.Name = NameFromIdentifier(sub.Email, sub.Phone, sub.Linkedin)
		if sub.Name != nil {
			p.Name = *sub.Name
		}
		return p, PersonCreated, true
	}
	p = *matched
	pt := PersonPatch{}
	if p.Email == nil && sub.Email != nil {
		pt.SetEmail, pt.Email = true, sub.Email
	}
	if p.PhoneNumber == nil && sub.Phone != nil {
		pt.SetPhone, pt.PhoneNumber = true, sub.Phone
	}
	if p.LinkedinProfileURL == nil && sub.Linkedin != nil {
		pt.SetLinkedin, pt.Linkedin = true, sub.Linkedin
	}
	return p, PersonMatched, p.Apply(pt, in.Now)
}

// Enriched announces a submission's person and account. Its subject is the submission,
// so webhooks deliver form.submitted and its result in order.
func Enriched(f FormSubmitted, p Person, outcome string, accountID *string, matchedBy string) Event {
	linked := AccountNone
	if accountID != nil {
		linked = AccountLinked
	}
	return Event{Type: events.TypeFormEnriched, Subject: f.FormSubmissionID, Payload: FormEnriched{
		Type: events.TypeFormEnriched, FormSubmissionID: f.FormSubmissionID, AudienceSessionID: f.AudienceSessionID,
		PageID: f.PageID, PersonID: p.ID, AccountID: accountID, Person: outcome, Account: linked, MatchedBy: matchedBy}}
}

// EnrichmentFailed announces why a submission could not be enriched (same subject as
// Enriched).
func EnrichmentFailed(f FormSubmitted, why *EnrichmentError) Event {
	return Event{Type: events.TypeFormEnrichmentFailed, Subject: f.FormSubmissionID, Payload: FormEnrichmentFailed{
		Type: events.TypeFormEnrichmentFailed, FormSubmissionID: f.FormSubmissionID, AudienceSessionID: f.AudienceSessionID,
		PageID: f.PageID, Reason: why.Reason, Detail: why.Detail}}
}
