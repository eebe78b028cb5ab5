// Package app holds the persons use cases: it makes IDs and timestamps, derives domains,
// runs the form enrichment step by step (its rules are domain.EnrichPerson, domain.Enriched
// and domain.EnrichmentFailed), and calls the repository.
package app

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/customerapi/platform/libs/consumer"
	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/libs/ids"
	"github.com/customerapi/platform/libs/timestamp"
	"github.com/customerapi/platform/services/persons/internal/domain"
)

// Store is what the use cases need from storage: the repository, and the enrichment's
// steps, which run in the transaction of the consumed event (so they take its pgx.Tx and
// stay out of the domain, which imports no driver).
type Store interface {
	domain.Repository
	Enrichments
}

// Enrichments is what the form enrichment needs from storage, each step inside the
// consumer's transaction.
type Enrichments interface {
	// BeginEnrichment records that a submission is being enriched; false when it was before.
	BeginEnrichment(ctx context.Context, tx pgx.Tx, in domain.Submission) (bool, error)
	// PersonByIdentifier serialises enrichments of one identifier and returns the person
	// it names, locked, or nil.
	PersonByIdentifier(ctx context.Context, tx pgx.Tx, tenantID string, sub domain.Submitted) (*domain.Person, error)
	// SaveEnrichedPerson stores a person the enrichment created or changed.
	SaveEnrichedPerson(ctx context.Context, tx pgx.Tx, p *domain.Person, created bool) error
	// AccountOfDomain returns the ID of the tenant's account with the domain, or nil.
	AccountOfDomain(ctx context.Context, tx pgx.Tx, tenantID, domainName string) (*string, error)
	// FinishEnrichment records a submission's outcome and stores its event.
	FinishEnrichment(ctx context.Context, tx pgx.Tx, in domain.Submission, outcome string, personID *string, evt domain.Event) error
}

// Service runs the persons use cases.
type Service struct {
	Repo Store
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
	return s.Repo.UpdatePerson(ctx, tenantID, id, func(x *domain.Person) bool { return x.Apply(p, now) })
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

// HandleFormSubmitted is the consumer handler of form.submitted: it enriches the
// submission in the consumer's transaction. A payload that cannot be read, or has no
// form submission ID to report on, can never succeed: it is dead-lettered.
func (s *Service) HandleFormSubmitted(ctx context.Context, tx pgx.Tx, evt events.Envelope) error {
	f, err := domain.ParseFormSubmitted(evt.Payload)
	if err != nil {
		return consumer.Permanent(err)
	}
	if !storable(f.FormSubmissionID) || !storable(evt.TenantID) {
		return consumer.Permanent(errMissingSubmission)
	}
	return s.Enrich(ctx, tx, domain.Submission{TenantID: evt.TenantID, EventID: evt.ID, Form: f,
		NewPersonID: ids.New("person"), Now: s.Clock.Now()})
}

// Enrich finds the person a submission names, or creates one, fills the identifiers the
// person lacks (domain.EnrichPerson), links the account of the person's domain, and
// announces form.enriched, or form.enrichment_failed when the submission names nobody.
// A submission enriched before changes nothing.
func (s *Service) Enrich(ctx context.Context, tx pgx.Tx, in domain.Submission) error {
	first, err := s.Repo.BeginEnrichment(ctx, tx, in)
	if err != nil || !first {
		return err
	}
	sub, invalid := in.Form.Validate()
	if invalid != nil {
		return s.Repo.FinishEnrichment(ctx, tx, in, domain.OutcomeFailed, nil, domain.EnrichmentFailed(in.Form, invalid))
	}
	matched, err := s.Repo.PersonByIdentifier(ctx, tx, in.TenantID, sub)
	if err != nil {
		return err
	}
	p, outcome, changed := domain.EnrichPerson(matched, sub, in)
	if changed {
		if err := s.Repo.SaveEnrichedPerson(ctx, tx, &p, matched == nil); err != nil {
			return err
		}
	}
	var accountID *string
	if p.Domain != nil {
		if accountID, err = s.Repo.AccountOfDomain(ctx, tx, in.TenantID, *p.Domain); err != nil {
			return err
		}
	}
	return s.Repo.FinishEnrichment(ctx, tx, in, outcome, &p.ID, domain.Enriched(in.Form, p, outcome, accountID, sub.Kind))
}

// storable reports whether s is a non-empty text PostgreSQL can store.
func storable(s string) bool {
	return s != "" && utf8.ValidString(s) && !strings.ContainsRune(s, 0)
}

type constError string

func (e constError) Error() string { return string(e) }

const errMissingSubmission = constError("form.submitted without a usable formSubmissionId or tenant")
