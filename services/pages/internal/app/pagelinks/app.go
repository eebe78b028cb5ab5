// Package pagelinks holds the page link use cases.
package pagelinks

import (
	"context"

	"github.com/customerapi/platform/libs/ids"
	"github.com/customerapi/platform/libs/timestamp"
	"github.com/customerapi/platform/services/pages/internal/domain/pagelink"
)

// pageLinkPrefix is the TypeID prefix of page links.
const pageLinkPrefix = "pagelink"

// Service runs the page link use cases. Page links announce no events.
type Service struct {
	Store pagelink.Repository
	// Clock tells the time (the system clock when nil).
	Clock timestamp.Clock
}

// Create stores a new link whose path the caller has normalised (pagelink.NormalisePath)
// and whose target it has checked (pagelink.CheckTarget); it gets its ID, path key and
// times here, its target is looked up by the store.
func (s *Service) Create(ctx context.Context, l pagelink.Link) (pagelink.Link, error) {
	now := s.Clock.Now()
	l.ID, l.PathKey, l.CreatedAt, l.UpdatedAt, l.DeletedAt = ids.New(pageLinkPrefix), pagelink.PathKey(l.Path), now, now, nil
	return s.Store.Create(ctx, l)
}

// Get returns a link of the tenant, deleted or not.
func (s *Service) Get(ctx context.Context, tenantID, id string) (pagelink.Link, error) {
	return s.Store.Get(ctx, tenantID, id)
}

// Delete soft-deletes a link, freeing its path; deleting a deleted link changes nothing.
func (s *Service) Delete(ctx context.Context, tenantID, id string) error {
	return s.Store.Delete(ctx, tenantID, id, s.Clock.Now())
}

// Search returns a page of live links matching q, in path order, and how many match.
func (s *Service) Search(ctx context.Context, tenantID string, q pagelink.Search, after *pagelink.After,
	limit int) ([]pagelink.Link, int64, error) {
	return s.Store.Search(ctx, tenantID, q, after, limit)
}
