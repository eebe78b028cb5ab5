package domain

import (
	"context"
	"time"
)

// Repository is what the use cases need from storage.
type Repository interface {
	CreatePerson(ctx context.Context, p Person) (Person, error)
	GetPerson(ctx context.Context, tenantID, id string) (Person, error)
	UpdatePerson(ctx context.Context, tenantID, id string, fn func(*Person) bool) (Person, error)
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
