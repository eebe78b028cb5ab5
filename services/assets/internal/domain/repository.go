package domain

import (
	"context"
	"time"
)

// Repository is what the use cases need from the database.
type Repository interface {
	Reserve(ctx context.Context, tenantID string, keys []string, due time.Time) error
	Forget(ctx context.Context, keys []string) error
	DueAt(ctx context.Context, keys []string, due time.Time) error
	Create(ctx context.Context, a Asset, keys []string) error
	Get(ctx context.Context, tenantID, id string) (Asset, error)
	Update(ctx context.Context, tenantID, id string, now time.Time, fn func(*Asset) (Change, error)) (Asset, Change, error)
	List(ctx context.Context, tenantID string, state State, f Filter, after string, limit int) ([]Asset, int64, error)
	PurgeDue(ctx context.Context, cutoff, now time.Time, limit int) (int, []string, error)
	TakeDue(ctx context.Context, now time.Time, limit int, leaseEnd time.Time) ([]string, error)
}
