package domain

import (
	"context"
	"time"
)

// Repository is the storage of pages, audiences, versions and messages; each change is
// kept with its events.
type Repository interface {
	CreatePage(ctx context.Context, p Page) error
	GetPage(ctx context.Context, tenantID, id string) (Page, error)
	ListPages(ctx context.Context, tenantID, afterID string, limit int) ([]Page, int64, error)
	UpdatePage(ctx context.Context, tenantID, id string, withDeleted bool, fn func(*Page) error) (Page, error)
	CreateAudience(ctx context.Context, a Audience, v Version, name func(n int64) string) (Audience, error)
	GetAudience(ctx context.Context, tenantID, pageID, id string) (Audience, error)
	ListAudiences(ctx context.Context, tenantID, pageID, afterID string, limit int) ([]Audience, int64, error)
	UpdateAudience(ctx context.Context, tenantID, pageID, id string, fn func(*Audience) error) (Audience, error)
	ArchiveAudience(ctx context.Context, tenantID, pageID, id string, now time.Time) (Audience, error)
	CreateVersion(ctx context.Context, v Version) (Version, bool, error)
	ListVersions(ctx context.Context, tenantID, pageID, audienceID string, below int64, limit int) ([]Version, int64, error)
	Messages(ctx context.Context, tenantID, pageID, audienceID string) (Messages, error)
	AddMessage(ctx context.Context, tenantID, pageID string, m Message, conversationID string,
		prev func(a *Audience, pageContext string) Context) (Message, error)
}

// Queue is the versions' processing queue in storage.
type Queue interface {
	// Claim leases the next version to process (ErrNothingToProcess when none is
	// ready, ErrGaveUp when it cancelled one that failed too often).
	Claim(ctx context.Context, now time.Time, lease time.Duration) (Claim, error)
	// Finish completes a claimed version (ErrLeaseLost when another worker took it).
	Finish(ctx context.Context, c Claim, now time.Time) (Version, error)
}
