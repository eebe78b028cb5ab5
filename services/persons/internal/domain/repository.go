package domain

import (
	"context"
	"time"

	"github.com/customerapi/platform/libs/events"
)

// Repository is what the use cases need from storage.
type Repository interface {
	CreatePerson(ctx context.Context, p Person) (Person, error)
	GetPerson(ctx context.Context, tenantID, id string) (Person, error)
	UpdatePerson(ctx context.Context, tenantID, id string, change Change[Person]) (Person, error)
	DeletePerson(ctx context.Context, tenantID, id string) error
	SearchPersons(ctx context.Context, tenantID, query, after string, limit int) ([]Person, *int64, error)
	CreateAccount(ctx context.Context, a Account) (Account, error)
	GetAccount(ctx context.Context, tenantID, id string) (Account, error)
	ListAccounts(ctx context.Context, tenantID string, emptyOnly bool, after string, limit int) ([]Account, int64, error)
	CreateLog(ctx context.Context, k LogOwner, tenantID string, l Log) (Log, bool, error)
	GetLog(ctx context.Context, k LogOwner, tenantID, ownerID, id string) (Log, error)
	ListLogs(ctx context.Context, k LogOwner, tenantID, ownerID string, includeDeleted bool, before string, limit int) ([]Log, int64, error)
	DeleteLog(ctx context.Context, k LogOwner, tenantID, ownerID, id string, now time.Time) error
}

// Change is the update callback of every service (events.Change).
type Change[T any] = events.Change[T]

// Enrichments are the form enrichment's steps in storage, all inside the transaction of
// the consumed event, to which an implementation is bound.
type Enrichments interface {
	// BeginEnrichment records that a submission is being enriched; false when it was before.
	BeginEnrichment(ctx context.Context, in Submission) (bool, error)
	// PersonByIdentifier serialises enrichments of one identifier and returns the person
	// it names, locked, or nil.
	PersonByIdentifier(ctx context.Context, tenantID string, sub Submitted) (*Person, error)
	// SaveEnrichedPerson stores a person the enrichment created or changed.
	SaveEnrichedPerson(ctx context.Context, p *Person, created bool) error
	// AccountOfDomain returns the ID of the tenant's account with the domain, or nil.
	AccountOfDomain(ctx context.Context, tenantID, domainName string) (*string, error)
	// FinishEnrichment records a submission's outcome and stores its event.
	FinishEnrichment(ctx context.Context, in Submission, outcome string, personID *string, evt Event) error
}
