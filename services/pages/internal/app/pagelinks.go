package app

import (
	"context"

	"github.com/customerapi/platform/libs/ids"
	"github.com/customerapi/platform/libs/timestamp"
	"github.com/customerapi/platform/services/pages/internal/domain"
)

// pageLinkPrefix is the TypeID prefix of page links.
const pageLinkPrefix = "pagelink"

// PageLinks runs the page link use cases. Page links announce no events.
type PageLinks struct {
	Store domain.PageLinkRepository
	// Clock tells the time (the system clock when nil).
	Clock timestamp.Clock
}

// Create stores a new link whose path the caller has normalised (domain.NormalisePath)
// and whose target it has checked (domain.CheckTarget); it gets its ID, path key and
// times here, its target is looked up by the store.
func (s *PageLinks) Create(ctx context.Context, l domain.PageLink) (domain.PageLink, error) {
	now := s.Clock.Now()
	l.ID, l.PathKey, l.CreatedAt, l.UpdatedAt, l.DeletedAt = ids.New(pageLinkPrefix), domain.PathKey(l.Path), now, now, nil
	return s.Store.Create(ctx, l)
}

// Get returns a link of the tenant, deleted or not.
func (s *PageLinks) Get(ctx context.Context, tenantID, id string) (domain.PageLink, error) {
	return s.Store.Get(ctx, tenantID, id)
}

// Delete soft-deletes a link, freeing its path; deleting a deleted link changes nothing.
func (s *PageLinks) Delete(ctx context.Context, tenantID, id string) error {
	return s.Store.Delete(ctx, tenantID, id, s.Clock.Now())
}

// Search returns a page of live links matching q, in path order, and how many match.
func (s *PageLinks) Search(ctx context.Context, tenantID string, q domain.PageLinkSearch, after *domain.PageLinkAfter,
	limit int) ([]domain.PageLink, int64, error) {
	return s.Store.Search(ctx, tenantID, q, after, limit)
}
