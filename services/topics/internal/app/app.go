// Package app holds the topics use cases: it makes IDs and timestamps, applies patches,
// decides which event each change announces, and calls the repository, which stores the
// change and its event in one transaction.
package app

import (
	"context"

	"github.com/customerapi/platform/libs/ids"
	"github.com/customerapi/platform/libs/keyset"
	"github.com/customerapi/platform/libs/timestamp"
	"github.com/customerapi/platform/services/topics/internal/domain"
)

// Service runs the topics use cases.
type Service struct {
	Repo domain.Repository
	// Clock tells the time (the system clock when nil).
	Clock timestamp.Clock
}

// NewTopic is the input of CreateTopic.
type NewTopic struct {
	Title     string
	Purpose   *string
	SortOrder int64
	IsDefault bool
}

// CreateTopic creates a topic with no entries.
func (s *Service) CreateTopic(ctx context.Context, tenantID string, in NewTopic) (domain.Topic, error) {
	now := s.Clock.Now()
	t := domain.Topic{ID: ids.New("topic"), TenantID: tenantID, Title: in.Title, Purpose: in.Purpose,
		SortOrder: in.SortOrder, IsDefault: in.IsDefault, CreatedAt: now, UpdatedAt: now, Entries: []domain.Entry{}}
	return t, s.Repo.CreateTopic(ctx, t, domain.TopicCreated(t))
}

// UpdateTopic applies a patch.
func (s *Service) UpdateTopic(ctx context.Context, tenantID, id string, p domain.TopicPatch) (domain.Topic, error) {
	now := s.Clock.Now()
	return s.Repo.UpdateTopic(ctx, tenantID, id, func(t *domain.Topic) (domain.Event, bool, error) {
		changed := t.Apply(p, now)
		return domain.TopicUpdated(*t), changed, nil
	})
}

// DeleteTopic deletes a topic and its entries.
func (s *Service) DeleteTopic(ctx context.Context, tenantID, id string) error {
	return s.Repo.DeleteTopic(ctx, tenantID, id, domain.TopicDeleted(id))
}

// GetTopic returns a topic with its entries.
func (s *Service) GetTopic(ctx context.Context, tenantID, id string) (domain.Topic, error) {
	return s.Repo.GetTopic(ctx, tenantID, id)
}

// ListTopics returns a page of topics.
func (s *Service) ListTopics(ctx context.Context, tenantID string, after *keyset.Position, limit int) ([]domain.Topic, int64, error) {
	return s.Repo.ListTopics(ctx, tenantID, after, limit)
}

// NewEntry is the input of AddEntry.
type NewEntry struct {
	Content   domain.Content
	SortOrder int64
}

// AddEntry adds an entry to a topic.
func (s *Service) AddEntry(ctx context.Context, tenantID, topicID string, in NewEntry) (domain.Entry, error) {
	now := s.Clock.Now()
	e := domain.Entry{ID: ids.New("topicentry"), TopicID: topicID, SortOrder: in.SortOrder, Content: in.Content,
		CreatedAt: now, UpdatedAt: now}
	return e, s.Repo.AddEntry(ctx, tenantID, e, domain.EntryCreated(e))
}

// UpdateEntry applies a patch to an entry.
func (s *Service) UpdateEntry(ctx context.Context, tenantID, topicID, entryID string, p domain.EntryPatch) (domain.Entry, error) {
	now := s.Clock.Now()
	return s.Repo.UpdateEntry(ctx, tenantID, topicID, entryID, func(e *domain.Entry) (domain.Event, bool, error) {
		changed := e.Apply(p, now)
		return domain.EntryUpdated(*e), changed, nil
	})
}

// DeleteEntry deletes an entry.
func (s *Service) DeleteEntry(ctx context.Context, tenantID, topicID, entryID string) error {
	return s.Repo.DeleteEntry(ctx, tenantID, topicID, entryID, domain.EntryDeleted(topicID, entryID))
}

// GetEntry returns an entry.
func (s *Service) GetEntry(ctx context.Context, tenantID, topicID, entryID string) (domain.Entry, error) {
	return s.Repo.GetEntry(ctx, tenantID, topicID, entryID)
}

// ListEntries returns a page of a topic's entries.
func (s *Service) ListEntries(ctx context.Context, tenantID, topicID string, after *keyset.Position, limit int) ([]domain.Entry, int64, error) {
	return s.Repo.ListEntries(ctx, tenantID, topicID, after, limit)
}
