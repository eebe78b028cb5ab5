// Package app holds the persons use cases: it makes IDs and timestamps, derives domains,
// runs the form enrichment step by step (its rules are domain.EnrichPerson, domain.Enriched
// and domain.EnrichmentFailed) through steps bound to the consumer's transaction, and
// calls the repository.
package app

import (
	"context"

	"github.com/customerapi/platform/libs/ids"
	"github.com/customerapi/platform/libs/timestamp"
	"github.com/customerapi/platform/services/persons/internal/domain"
)

// Service runs the persons use cases.
type Service struct {
	Repo domain.Repository
	// Clock tells the time (the system clock when nil).
	Clock timestamp.Clock
}

// NewPerson is the input of CreatePerson; Domain, when set, is already normalised.
type NewPerson struct {
	Name        string
	Email       *string
	Domain      *string
	PhoneNumber *string
	Linkedin    *string
}

// CreatePerson creates a person; without a domain, the domain of the email is used.
func (s *Service) CreatePerson(ctx context.Context, tenantID string, in NewPerson) (domain.Person, error) {
	now := s.Clock.Now()
	p := domain.Person{ID: ids.New("person"), TenantID: tenantID, Name: in.Name, Email: in.Email, Domain: in.Domain,
		PhoneNumber: in.PhoneNumber, LinkedinProfileURL: in.Linkedin, CreatedAt: now, UpdatedAt: now}
	if p.Domain == nil {
		p.Domain = domain.DomainFromEmail(p.Email)
	}
	return s.Repo.CreatePerson(ctx, p)
}

// GetPerson returns a person.
func (s *Service) GetPerson(ctx context.Context, tenantID, id string) (domain.Person, error) {
	return s.Repo.GetPerson(ctx, tenantID, id)
}

// UpdatePerson applies a patch.
func (s *Service) UpdatePerson(ctx context.Context, tenantID, id string, p domain.PersonPatch) (domain.Person, error) {
	now := s.Clock.Now()
	return s.Repo.UpdatePerson(ctx, tenantID, id, func(x *domain.Person) (domain.Event, bool, error) {
		return domain.Event{}, x.Apply(p, now), nil
	})
}

// DeletePerson deletes a person and its logs.
func (s *Service) DeletePerson(ctx context.Context, tenantID, id string) error {
	return s.Repo.DeletePerson(ctx, tenantID, id)
}

// SearchPersons returns a page of persons matching query.
func (s *Service) SearchPersons(ctx context.Context, tenantID, query, after string, limit int) ([]domain.Person, *int64, error) {
	return s.Repo.SearchPersons(ctx, tenantID, query, after, limit)
}

// CreateAccount creates an account for a normalised domain.
func (s *Service) CreateAccount(ctx context.Context, tenantID, dom string, name *string) (domain.Account, error) {
	now := s.Clock.Now()
	return s.Repo.CreateAccount(ctx, domain.Account{ID: ids.New("account"), TenantID: tenantID, Domain: dom, Name: name,
		CreatedAt: now, UpdatedAt: now})
}

// GetAccount returns an account with its linked persons.
func (s *Service) GetAccount(ctx context.Context, tenantID, id string) (domain.Account, error) {
	return s.Repo.GetAccount(ctx, tenantID, id)
}

// ListAccounts returns a page of accounts.
func (s *Service) ListAccounts(ctx context.Context, tenantID string, emptyOnly bool, after string, limit int) ([]domain.Account, int64, error) {
	return s.Repo.ListAccounts(ctx, tenantID, emptyOnly, after, limit)
}

// NewLog is the input of CreateLog.
type NewLog struct {
	Source, Type   string
	Payload        []byte
	IdempotencyKey *string
}

// CreateLog writes a log entry to an owner; created is false when an earlier entry with
// the same idempotency key and body is returned instead.
func (s *Service) CreateLog(ctx context.Context, k domain.LogOwner, tenantID, ownerID string, in NewLog) (domain.Log, bool, error) {
	prefix := "personlog"
	if k == domain.AccountLogs {
		prefix = "accountlog"
	}
	l := domain.Log{ID: ids.New(prefix), OwnerID: ownerID, Source: in.Source, Type: in.Type, Payload: in.Payload,
		IdempotencyKey: in.IdempotencyKey, CreatedAt: s.Clock.Now()}
	return s.Repo.CreateLog(ctx, k, tenantID, l)
}

// GetLog returns a log entry.
func (s *Service) GetLog(ctx context.Context, k domain.LogOwner, tenantID, ownerID, id string) (domain.Log, error) {
	return s.Repo.GetLog(ctx, k, tenantID, ownerID, id)
}

// ListLogs returns a page of an owner's log entries, newest first.
func (s *Service) ListLogs(ctx context.Context, k domain.LogOwner, tenantID, ownerID string, includeDeleted bool, before string, limit int) ([]domain.Log, int64, error) {
	return s.Repo.ListLogs(ctx, k, tenantID, ownerID, includeDeleted, before, limit)
}

// DeleteLog soft-deletes a log entry.
func (s *Service) DeleteLog(ctx context.Context, k domain.LogOwner, tenantID, ownerID, id string) error {
	return s.Repo.DeleteLog(ctx, k, tenantID, ownerID, id, s.Clock.Now())
}

// EnrichForm enriches a submission of the form.submitted event eventID (Enrich), with a
// new person's ID and the time of now.
func (s *Service) EnrichForm(ctx context.Context, steps domain.Enrichments, tenantID, eventID string, f domain.FormSubmitted) error {
	return s.Enrich(ctx, steps, domain.Submission{TenantID: tenantID, EventID: eventID, Form: f,
		NewPersonID: ids.New("person"), Now: s.Clock.Now()})
}

// Enrich finds the person a submission names, or creates one, fills the identifiers the
// person lacks (domain.EnrichPerson), links the account of the person's domain, and
// announces form.enriched, or form.enrichment_failed when the submission names nobody.
// A submission enriched before changes nothing.
func (s *Service) Enrich(ctx context.Context, steps domain.Enrichments, in domain.Submission) error {
	first, err := steps.BeginEnrichment(ctx, in)
	if err != nil || !first {
		return err
	}
	sub, invalid := in.Form.Validate()
	if invalid != nil {
		return steps.FinishEnrichment(ctx, in, domain.OutcomeFailed, nil, domain.EnrichmentFailed(in.Form, invalid))
	}
	matched, err := steps.PersonByIdentifier(ctx, in.TenantID, sub)
	if err != nil {
		return err
	}
	p, outcome, changed := domain.EnrichPerson(matched, sub, in)
	if changed {
		if err := steps.SaveEnrichedPerson(ctx, &p, matched == nil); err != nil {
			return err
		}
	}
	var accountID *string
	if p.Domain != nil {
		if accountID, err = steps.AccountOfDomain(ctx, in.TenantID, *p.Domain); err != nil {
			return err
		}
	}
	return steps.FinishEnrichment(ctx, in, outcome, &p.ID, domain.Enriched(in.Form, p, outcome, accountID, sub.Kind))
}
