package domain

import (
	"context"
	"time"
)

// Repository is the storage of pages, audiences, versions and messages; each change is
// kept with its events, which the use cases choose.
type Repository interface {
	CreatePage(ctx context.Context, p Page) error
	GetPage(ctx context.Context, tenantID, id string) (Page, error)
	ListPages(ctx context.Context, tenantID, afterID string, limit int) ([]Page, int64, error)
	// UpdatePage updates a page; a deleted one is found only withDeleted (restore).
	UpdatePage(ctx context.Context, tenantID, id string, withDeleted bool, change Change[Page]) (Page, error)
	// CreateAudience stores an audience (its ComputedName from AudienceName) with its first
	// version, which evt announces.
	CreateAudience(ctx context.Context, a Audience, v Version, evt Event) (Audience, error)
	GetAudience(ctx context.Context, tenantID, pageID, id string) (Audience, error)
	ListAudiences(ctx context.Context, tenantID, pageID, afterID string, limit int) ([]Audience, int64, error)
	UpdateAudience(ctx context.Context, tenantID, pageID, id string, change Change[Audience]) (Audience, error)
	// ArchiveAudience updates an audience by archive and, when that changed it, cancels
	// its queued versions at its ArchivedAt, each announced by cancelled.
	ArchiveAudience(ctx context.Context, tenantID, pageID, id string, archive Change[Audience],
		cancelled func(v *Version) Event) (Audience, error)
	// CreateVersion queues v, which evt announces; a used operation key returns the
	// key's version, created false and nothing announced.
	CreateVersion(ctx context.Context, v Version, evt Event) (out Version, created bool, err error)
	ListVersions(ctx context.Context, tenantID, pageID, audienceID string, below int64, limit int) ([]Version, int64, error)
	Messages(ctx context.Context, tenantID, pageID, audienceID string) (Messages, error)
	AddMessage(ctx context.Context, tenantID, pageID string, m Message, conversationID string) (Message, error)
}

// Queue is the versions' processing queue in storage.
type Queue interface {
	// Claim leases the next version to process (ErrNothingToProcess when none is
	// ready, ErrGaveUp when it cancelled one that failed too often).
	Claim(ctx context.Context, now time.Time, lease time.Duration) (Claim, error)
	// Finish completes a claimed version (ErrLeaseLost when another worker took it).
	Finish(ctx context.Context, c Claim, now time.Time) (Version, error)
}

// Wakeups tell the processing workers that a version may be ready: Listen calls wake on
// every new version, once at start, and at the latest every poll, until ctx ends.
type Wakeups interface {
	Listen(ctx context.Context, wake func())
}
