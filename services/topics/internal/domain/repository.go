package domain

import (
	"context"
	"github.com/customerapi/platform/libs/keyset"
)

// Repository is what the use cases need from storage. Every write stores its event in
// the same transaction as the change.
type Repository interface {
	CreateTopic(ctx context.Context, t Topic, evt Event) error
	UpdateTopic(ctx context.Context, tenantID, id string, change Change[Topic]) (Topic, error)
	DeleteTopic(ctx context.Context, tenantID, id string, evt Event) error
	GetTopic(ctx context.Context, tenantID, id string) (Topic, error)
	ListTopics(ctx context.Context, tenantID string, after *keyset.Position, limit int) ([]Topic, int64, error)
	AddEntry(ctx context.Context, tenantID string, e Entry, evt Event) error
	UpdateEntry(ctx context.Context, tenantID, topicID, entryID string, change Change[Entry]) (Entry, error)
	DeleteEntry(ctx context.Context, tenantID, topicID, entryID string, evt Event) error
	GetEntry(ctx context.Context, tenantID, topicID, entryID string) (Entry, error)
	ListEntries(ctx context.Context, tenantID, topicID string, after *keyset.Position, limit int) ([]Entry, int64, error)
}
