package adapters

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/customerapi/platform/libs/outbox"
	"github.com/customerapi/platform/libs/postgres"
	"github.com/customerapi/platform/services/persons/internal/domain"
)

// enrichments are the enrichment's storage steps, bound to the consumer's transaction;
// the rule that joins them is the use case's (app.Service.Enrich).
type enrichments struct {
	tx  pgx.Tx
	out outbox.Writer
}

// Enrichments returns the enrichment's steps inside tx, the consumer's transaction.
func (s *Store) Enrichments(tx pgx.Tx) domain.Enrichments { return enrichments{tx: tx, out: s.out} }

// BeginEnrichment records that a submission is being enriched; false when it was
// enriched before (under another event ID), and then nothing else is to be done.
func (e enrichments) BeginEnrichment(ctx context.Context, in domain.Submission) (bool, error) {
	tag, err := e.tx.Exec(ctx, `INSERT INTO form_enrichments (tenant_id, form_submission_id, event_id, outcome, created_at)
		VALUES ($1, $2, $3, 'pending', $4) ON CONFLICT DO NOTHING`, in.TenantID, in.Form.FormSubmissionID, in.EventID, in.Now)
	if err != nil {
		return false, fmt.Errorf("record enrichment: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

// PersonByIdentifier waits for any other enrichment of the same identifier to finish
// (two submissions of a new email create one person, not two) and returns the person the
// identifier names, locked, or nil when none does.
func (e enrichments) PersonByIdentifier(ctx context.Context, tenantID string, sub domain.Submitted) (*domain.Person, error) {
	if _, err := e.tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
		"persons-ident:"+tenantID+":"+sub.Kind+":"+sub.Key); err != nil {
		return nil, fmt.Errorf("lock identifier: %w", err)
	}
	p, err := scanPerson(e.tx.QueryRow(ctx, "SELECT "+personCols+" FROM persons WHERE tenant_id = $1 AND "+sub.Kind+
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
func (e enrichments) SaveEnrichedPerson(ctx context.Context, p *domain.Person, created bool) error {
	if created {
		return insertPerson(ctx, e.tx, p)
	}
	return updatePerson(ctx, e.tx, *p)
}

// AccountOfDomain returns the ID of the tenant's account with the domain, or nil.
func (e enrichments) AccountOfDomain(ctx context.Context, tenantID, domainName string) (*string, error) {
	var id string
	err := e.tx.QueryRow(ctx, "SELECT account_id FROM accounts WHERE tenant_id = $1 AND domain = $2", tenantID, domainName).Scan(&id)
	if postgres.IsNoRows(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("account of domain: %w", err)
	}
	return &id, nil
}

// FinishEnrichment records a submission's outcome and writes its event.
func (e enrichments) FinishEnrichment(ctx context.Context, in domain.Submission, outcome string, personID *string, evt domain.Event) error {
	if _, err := e.tx.Exec(ctx, `UPDATE form_enrichments SET outcome = $3, person_id = $4
		WHERE tenant_id = $1 AND form_submission_id = $2`, in.TenantID, in.Form.FormSubmissionID, outcome, personID); err != nil {
		return fmt.Errorf("record outcome: %w", err)
	}
	return emit(ctx, e.out, e.tx, in.TenantID, evt)
}
