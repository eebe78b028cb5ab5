package adapters

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/libs/postgres"
	"github.com/customerapi/platform/services/persons/internal/domain"
)

// Enrich handles a form submission inside the consumer's transaction: it finds the
// person by the submitted identifier or creates one, fills identifiers the person lacks,
// looks up the account of the person's domain, and writes form.enriched (or
// form.enrichment_failed) to the outbox. A submission already enriched changes nothing.
func (s *Store) Enrich(ctx context.Context, tx pgx.Tx, in domain.Submission) error {
	f := in.Form
	tag, err := tx.Exec(ctx, `INSERT INTO form_enrichments (tenant_id, form_submission_id, event_id, outcome, created_at)
		VALUES ($1, $2, $3, 'pending', $4) ON CONFLICT DO NOTHING`, in.TenantID, f.FormSubmissionID, in.EventID, in.Now)
	if err != nil {
		return fmt.Errorf("record enrichment: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return nil // this submission was enriched before (under another event ID)
	}
	sub, verr := f.Validate()
	if verr != nil {
		return s.finish(ctx, tx, in, "failed", nil, domain.FormEnrichmentFailed{Type: events.TypeFormEnrichmentFailed,
			FormSubmissionID: f.FormSubmissionID, AudienceSessionID: f.AudienceSessionID, PageID: f.PageID,
			Reason: verr.Reason, Detail: verr.Detail})
	}
	// One enrichment per identifier at a time: two submissions of a new email create one
	// person, not two.
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
		"persons-ident:"+in.TenantID+":"+sub.Kind+":"+sub.Key); err != nil {
		return fmt.Errorf("lock identifier: %w", err)
	}
	p, err := scanPerson(tx.QueryRow(ctx, "SELECT "+personCols+" FROM persons WHERE tenant_id = $1 AND "+sub.Kind+
		"_key = $2 ORDER BY person_id LIMIT 1 FOR UPDATE", in.TenantID, sub.Key))
	outcome := domain.PersonMatched
	switch {
	case postgres.IsNoRows(err):
		outcome = domain.PersonCreated
		p = domain.Person{ID: in.NewPersonID, TenantID: in.TenantID, Email: sub.Email, Domain: domain.DomainFromEmail(sub.Email),
			PhoneNumber: sub.Phone, LinkedinProfileURL: sub.Linkedin, CreatedAt: in.Now, UpdatedAt: in.Now}
		p.Name = domain.NameFromIdentifier(sub.Email, sub.Phone, sub.Linkedin)
		if sub.Name != nil {
			p.Name = *sub.Name
		}
		if err := insertPerson(ctx, tx, &p); err != nil {
			return err
		}
	case err != nil:
		return fmt.Errorf("match person: %w", err)
	default:
		// Enrich: fill what the person lacks, never overwrite.
		pt := domain.PersonPatch{}
		if p.Email == nil && sub.Email != nil {
			pt.SetEmail, pt.Email = true, sub.Email
		}
		if p.PhoneNumber == nil && sub.Phone != nil {
			pt.SetPhone, pt.PhoneNumber = true, sub.Phone
		}
		if p.LinkedinProfileURL == nil && sub.Linkedin != nil {
			pt.SetLinkedin, pt.Linkedin = true, sub.Linkedin
		}
		if p.Apply(pt, in.Now) {
			if err := updatePerson(ctx, tx, p); err != nil {
				return err
			}
		}
	}
	var accountID *string
	if p.Domain != nil {
		var id string
		err := tx.QueryRow(ctx, "SELECT account_id FROM accounts WHERE tenant_id = $1 AND domain = $2", in.TenantID, *p.Domain).Scan(&id)
		if err != nil && !postgres.IsNoRows(err) {
			return fmt.Errorf("account of domain: %w", err)
		}
		if err == nil {
			accountID = &id
		}
	}
	linked := domain.AccountNone
	if accountID != nil {
		linked = domain.AccountLinked
	}
	return s.finish(ctx, tx, in, outcome, &p.ID, domain.FormEnriched{Type: events.TypeFormEnriched,
		FormSubmissionID: f.FormSubmissionID, AudienceSessionID: f.AudienceSessionID, PageID: f.PageID,
		PersonID: p.ID, AccountID: accountID, Person: outcome, Account: linked, MatchedBy: sub.Kind})
}

// finish records the outcome and writes the event, whose subject is the submission (so
// webhooks deliver form.submitted and its result in order).
func (s *Store) finish(ctx context.Context, tx pgx.Tx, in domain.Submission, outcome string, personID *string, payload any) error {
	if _, err := tx.Exec(ctx, `UPDATE form_enrichments SET outcome = $3, person_id = $4
		WHERE tenant_id = $1 AND form_submission_id = $2`, in.TenantID, in.Form.FormSubmissionID, outcome, personID); err != nil {
		return fmt.Errorf("record outcome: %w", err)
	}
	typ := events.TypeFormEnriched
	if outcome == "failed" {
		typ = events.TypeFormEnrichmentFailed
	}
	return s.out.Emit(ctx, tx, events.TopicPersons, in.TenantID, typ, in.Form.FormSubmissionID, payload)
}
