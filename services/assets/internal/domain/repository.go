package domain

import (
	"context"
	"time"
)

// Repository is what the use cases need from the database. A change and its event are
// stored in one transaction, and so are the cleanup records of the objects a deleted
// asset frees (Asset.Objects).
type Repository interface {
	Reserve(ctx context.Context, tenantID string, keys []string, due time.Time) error
	Forget(ctx context.Context, keys []string) error
	DueAt(ctx context.Context, keys []string, due time.Time) error
	Create(ctx context.Context, a Asset, keys []string, evt Event) error
	Get(ctx context.Context, tenantID, id string) (Asset, error)
	Update(ctx context.Context, tenantID, id string, change Change[Asset]) (Asset, error)
	List(ctx context.Context, tenantID string, state State, f Filter, after string, limit int) ([]Asset, int64, error)
	// PurgeDue applies change to up to limit assets trashed before cutoff, across
	// tenants, and returns how many and the objects to remove.
	PurgeDue(ctx context.Context, cutoff time.Time, limit int, change Change[Asset]) (int, []string, error)
	TakeDue(ctx context.Context, now time.Time, limit int, leaseEnd time.Time) ([]string, error)
}
