package domain

import (
	"time"

	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/libs/timestamp"
)

// VersionCreated is the payload of page.version.created, exactly as the spec shows it.
type VersionCreated struct {
	Type      string `json:"type"`
	PageID    string `json:"pageId"`
	VersionID string `json:"versionId"`
	CreatedAt string `json:"createdAt"`
}

// VersionProcessed is the payload of page.version.processed.
type VersionProcessed struct {
	Type          string `json:"type"`
	PageID        string `json:"pageId"`
	AudienceID    string `json:"audienceId"`
	VersionID     string `json:"versionId"`
	VersionNumber int64  `json:"versionNumber"`
	Status        string `json:"status"`
	ProcessedAt   string `json:"processedAt"`
}

// VersionPublished is the payload of page.version.published.
type VersionPublished struct {
	Type          string `json:"type"`
	PageID        string `json:"pageId"`
	AudienceID    string `json:"audienceId"`
	VersionID     string `json:"versionId"`
	VersionNumber int64  `json:"versionNumber"`
	Status        string `json:"status"`
	PublishedAt   string `json:"publishedAt"`
}

// Event is what a change announces (the platform's events.Announcement); a version's
// events are about its audience, so an audience's events stay in order.
type Event = events.Announcement

// Change is the update callback of every service (events.Change).
type Change[T any] = events.Change[T]

// VersionCreatedEvent announces a new version (page.version.created).
func VersionCreatedEvent(v *Version) Event {
	return Event{Type: events.TypePageVersionCreated, Subject: v.AudienceID, Payload: VersionCreated{
		Type: events.TypePageVersionCreated, PageID: v.PageID, VersionID: v.ID, CreatedAt: timestamp.Format(v.CreatedAt)}}
}

// VersionProcessedEvent announces a version that finished processing at
// (page.version.processed).
func VersionProcessedEvent(v *Version, at time.Time) Event {
	return Event{Type: events.TypePageVersionProcessed, Subject: v.AudienceID, Payload: VersionProcessed{
		Type: events.TypePageVersionProcessed, PageID: v.PageID, AudienceID: v.AudienceID, VersionID: v.ID,
		VersionNumber: v.VersionNumber, Status: v.Status, ProcessedAt: timestamp.Format(at)}}
}

// VersionPublishedEvent announces a version that was published at (page.version.published).
func VersionPublishedEvent(v *Version, at time.Time) Event {
	return Event{Type: events.TypePageVersionPublished, Subject: v.AudienceID, Payload: VersionPublished{
		Type: events.TypePageVersionPublished, PageID: v.PageID, AudienceID: v.AudienceID, VersionID: v.ID,
		VersionNumber: v.VersionNumber, Status: v.Status, PublishedAt: timestamp.Format(at)}}
}
