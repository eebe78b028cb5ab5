package adapters

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/libs/postgres"
	"github.com/customerapi/platform/services/persons/internal/domain"
)

// The enrichment's storage steps. Each runs in the consumer's transaction; the rule that
// joins them is the use case's (app.Service.HandleFormSubmitted).

// BeginEnrichment records that a submission is being enriched; false when it was
// enriched before (under another event ID), and then nothing else is to be done.
func (s *Store) BeginEnrichment(ctx context.Context, tx pgx.Tx, in domain.Submission) (bool, error) {
	tag, err := tx.Exec(ctx, `INSERT INTO form_enrichments (tenant_id, form_submission_id, event_id, outcome, created_at)
		VALUES ($1, $2, $3, 'pending', $4) ON CONFLICT DO NOTHING`, in.TenantID, in.Form.FormSubmissionID, in.EventID, in.Now)
	if err != nil {
		return false, fmt.Errorf("record enrichment: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

// PersonByIdentifier waits for any other enrichment of the same identifier to finish
// (two submissions of a new email create one person, not two) and returns the person the
// identifier names, locked, or nil when none does.
func (s *Store) PersonByIdentifier(ctx context.Context, tx pgx.Tx, tenantID string, sub domain.Submitted) (*domain.Person, error) {
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
		"persons-ident:"+tenantID+":"+sub.Kind+":"+sub.Key); err != nil {
		return nil, fmt.Errorf("lock identifier: %w", err)
	}
	p, err := scanPerson(tx.QueryRow(ctx, "SELECT "+personCols+" FROM persons WHERE tenant_id = $1 AND "+sub.Kind+
		"_key = $2 ORDER BY person_id LIMIT 1 FOR UPDATE", tenantID, sub.Key))
	if postgres.IsNoRows(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("match person: %w", err)
	}
	return &p, nil
}

// SaveEnrichedPerson stores a person the enrichment created (created) or changed.
func (s *Store) SaveEnrichedPerson(ctx context.Context, tx pgx.Tx, p *domain.Person, created bool) error {
	if created {
		return insertPerson(ctx, tx, p)
	}
	return updatePerson(ctx, tx, *p)
}

// AccountOfDomain returns the ID of the tenant's account with the domain, or nil.
func (s *Store) AccountOfDomain(ctx context.Context, tx pgx.Tx, tenantID, domainName string) (*string, error) {
	var id string
	err := tx.QueryRow(ctx, "SELECT account_id FROM accounts WHERE tenant_id = $1 AND domain = $2", tenantID, domainName).Scan(&id)
	if postgres.IsNoRows(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("account of domain: %w", err)
	}
	return &id, nil
}

// FinishEnrichment records a submission's outcome and writes its event.
func (s *Store) FinishEnrichment(ctx context.Context, tx pgx.Tx, in domain.Submission, outcome string, personID *string, evt domain.Event) error {
	if _, err := tx.Exec(ctx, `UPDATE form_enrichments SET outcome = $3, person_id = $4
		WHERE tenant_id = $1 AND form_submission_id = $2`, in.TenantID, in.Form.FormSubmissionID, outcome, personID); err != nil {
		return fmt.Errorf("record outcome: %w", err)
	}
	return s.out.Emit(ctx, tx, events.TopicPersons, in.TenantID, evt.Type, evt.Subject, evt.Payload)
}
