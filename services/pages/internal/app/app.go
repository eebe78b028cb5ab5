// Package app holds the use cases of pages, audiences, versions and messages and the
// version processing worker: it makes IDs and timestamps, applies domain rules, chooses
// the events, and calls the store, which keeps each change with its events. The audience
// sessions and the page links have their own packages below.
package app

import (
	"context"

	"github.com/customerapi/platform/libs/ids"
	"github.com/customerapi/platform/libs/timestamp"
	"github.com/customerapi/platform/services/pages/internal/domain"
)

// Service runs the pages core use cases.
type Service struct {
	Store domain.Repository
	// Clock tells the time (the system clock when nil).
	Clock timestamp.Clock
}

// CreatePage stores a new draft page.
func (s *Service) CreatePage(ctx context.Context, p domain.Page) (domain.Page, error) {
	now := s.Clock.Now()
	p.ID, p.Status, p.CreatedAt, p.UpdatedAt, p.AudiencesCount = ids.New("page"), domain.PageDraft, now, now, 0
	if err := p.Check(); err != nil {
		return p, err
	}
	return p, s.Store.CreatePage(ctx, p)
}

// GetPage returns a visible page.
func (s *Service) GetPage(ctx context.Context, tenantID, id string) (domain.Page, error) {
	return s.Store.GetPage(ctx, tenantID, id)
}

// ListPages returns a page of visible pages.
func (s *Service) ListPages(ctx context.Context, tenantID, afterID string, limit int) ([]domain.Page, int64, error) {
	return s.Store.ListPages(ctx, tenantID, afterID, limit)
}

// UpdatePage applies a patch.
func (s *Service) UpdatePage(ctx context.Context, tenantID, id string, p domain.PagePatch) (domain.Page, error) {
	now := s.Clock.Now()
	return s.updatePage(ctx, tenantID, id, false, func(pg *domain.Page) error { return pg.Apply(p, now) })
}

// PublishPage publishes a page.
func (s *Service) PublishPage(ctx context.Context, tenantID, id string) (domain.Page, error) {
	now := s.Clock.Now()
	return s.updatePage(ctx, tenantID, id, false, func(pg *domain.Page) error { return pg.Publish(now) })
}

// ArchivePage archives a page.
func (s *Service) ArchivePage(ctx context.Context, tenantID, id string) (domain.Page, error) {
	now := s.Clock.Now()
	return s.updatePage(ctx, tenantID, id, false, func(pg *domain.Page) error { pg.Archive(now); return nil })
}

// DeletePage soft-deletes a page.
func (s *Service) DeletePage(ctx context.Context, tenantID, id string) error {
	now := s.Clock.Now()
	_, err := s.updatePage(ctx, tenantID, id, false, func(pg *domain.Page) error {
		pg.DeletedAt, pg.UpdatedAt = &now, now
		return nil
	})
	return err
}

// RestorePage brings back an archived or deleted page as a draft.
func (s *Service) RestorePage(ctx context.Context, tenantID, id string) (domain.Page, error) {
	now := s.Clock.Now()
	return s.updatePage(ctx, tenantID, id, true, func(pg *domain.Page) error { return pg.Restore(now) })
}

// updatePage stores what fn makes of a page; a page change announces no event.
func (s *Service) updatePage(ctx context.Context, tenantID, id string, withDeleted bool, fn func(*domain.Page) error) (domain.Page, error) {
	return s.Store.UpdatePage(ctx, tenantID, id, withDeleted, func(pg *domain.Page) (domain.Event, bool, error) {
		return domain.Event{}, true, fn(pg)
	})
}

// CreateAudience stores a new audience with its first version, queued for processing.
func (s *Service) CreateAudience(ctx context.Context, a domain.Audience) (domain.Audience, error) {
	now := s.Clock.Now()
	a.ID, a.Status, a.CreatedAt, a.UpdatedAt = ids.New("audience"), domain.StatusQueued, now, now
	a.Flags, a.IsNewPageAgent = []string{}, true
	if a.PublishBehavior == "" {
		a.PublishBehavior = domain.BehaviorPublish
	}
	v := domain.Version{ID: ids.New("version"), TenantID: a.TenantID, PageID: a.PageID, AudienceID: a.ID,
		VersionNumber: 1, Status: domain.StatusQueued, IsNewPageAgent: true, SupplementaryContext: a.SupplementaryContext,
		PublishOnComplete: a.PublishBehavior == domain.BehaviorPublish, CreatedAt: now, QueuedAt: &now}
	return s.Store.CreateAudience(ctx, a, v, domain.VersionCreatedEvent(&v))
}

// GetAudience returns an audience of a page.
func (s *Service) GetAudience(ctx context.Context, tenantID, pageID, id string) (domain.Audience, error) {
	return s.Store.GetAudience(ctx, tenantID, pageID, id)
}

// ListAudiences returns a page of a page's audiences.
func (s *Service) ListAudiences(ctx context.Context, tenantID, pageID, afterID string, limit int) ([]domain.Audience, int64, error) {
	return s.Store.ListAudiences(ctx, tenantID, pageID, afterID, limit)
}

// UpdateAudience applies a patch; an archived audience cannot change.
func (s *Service) UpdateAudience(ctx context.Context, tenantID, pageID, id string, p domain.AudiencePatch) (domain.Audience, error) {
	now := s.Clock.Now()
	return s.Store.UpdateAudience(ctx, tenantID, pageID, id, func(a *domain.Audience) (domain.Event, bool, error) {
		if a.ArchivedAt != nil {
			return domain.Event{}, false, domain.ErrAudienceArchived
		}
		a.Apply(p, now)
		return domain.Event{}, true, nil
	})
}

// ArchiveAudience archives an audience and cancels its queued versions, each announced
// as processed (cancelled), so every created version reaches a final event.
func (s *Service) ArchiveAudience(ctx context.Context, tenantID, pageID, id string) (domain.Audience, error) {
	now := s.Clock.Now()
	return s.Store.ArchiveAudience(ctx, tenantID, pageID, id,
		func(a *domain.Audience) (domain.Event, bool, error) { return domain.Event{}, a.Archive(now), nil },
		func(v *domain.Version) domain.Event { return domain.VersionProcessedEvent(v, now) })
}

// CreateVersion queues a new version; a repeated operation key returns the first
// version and created false.
func (s *Service) CreateVersion(ctx context.Context, tenantID, pageID, audienceID string, operationKey *string) (domain.Version, bool, error) {
	now := s.Clock.Now()
	v := domain.Version{ID: ids.New("version"), TenantID: tenantID, PageID: pageID, AudienceID: audienceID,
		Status: domain.StatusQueued, OperationKey: operationKey, CreatedAt: now, QueuedAt: &now}
	return s.Store.CreateVersion(ctx, v, domain.VersionCreatedEvent(&v))
}

// ListVersions returns a page of an audience's versions, newest first.
func (s *Service) ListVersions(ctx context.Context, tenantID, pageID, audienceID string, below int64, limit int) ([]domain.Version, int64, error) {
	return s.Store.ListVersions(ctx, tenantID, pageID, audienceID, below, limit)
}

// Messages returns an audience's messages read.
func (s *Service) Messages(ctx context.Context, tenantID, pageID, audienceID string) (domain.Messages, error) {
	return s.Store.Messages(ctx, tenantID, pageID, audienceID)
}

// NewChange is one proposed change of AddMessage.
type NewChange struct {
	Field    string
	NewValue string
}

// AddMessage adds a message whose changes become pending until the next version.
func (s *Service) AddMessage(ctx context.Context, tenantID, pageID, audienceID, content string, changes []NewChange) (domain.Message, error) {
	now := s.Clock.Now()
	m := domain.Message{ID: ids.New("message"), AudienceID: audienceID, Content: content, CreatedAt: now,
		Changes: make([]domain.ContextChange, len(changes))}
	for i, c := range changes {
		m.Changes[i] = domain.ContextChange{ID: ids.New("change"), MessageID: m.ID, Field: c.Field, NewValue: c.NewValue, CreatedAt: now}
	}
	return s.Store.AddMessage(ctx, tenantID, pageID, m, ids.New("conversation"))
}
