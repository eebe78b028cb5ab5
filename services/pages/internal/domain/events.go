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

// NewVersionCreated describes a new version.
func NewVersionCreated(v *Version) VersionCreated {
	return VersionCreated{Type: events.TypePageVersionCreated, PageID: v.PageID, VersionID: v.ID,
		CreatedAt: timestamp.Format(v.CreatedAt)}
}

// NewVersionProcessed describes a version that finished processing at.
func NewVersionProcessed(v *Version, at time.Time) VersionProcessed {
	return VersionProcessed{Type: events.TypePageVersionProcessed, PageID: v.PageID, AudienceID: v.AudienceID,
		VersionID: v.ID, VersionNumber: v.VersionNumber, Status: v.Status, ProcessedAt: timestamp.Format(at)}
}

// NewVersionPublished describes a version that was published at.
func NewVersionPublished(v *Version, at time.Time) VersionPublished {
	return VersionPublished{Type: events.TypePageVersionPublished, PageID: v.PageID, AudienceID: v.AudienceID,
		VersionID: v.ID, VersionNumber: v.VersionNumber, Status: v.Status, PublishedAt: timestamp.Format(at)}
}
