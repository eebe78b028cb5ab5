package domain

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Audience and version statuses (the spec's one set for both).
const (
	StatusQueued     = "queued"
	StatusProcessing = "processing"
	StatusDraft      = "draft"
	StatusPublished  = "published"
	StatusCancelled  = "cancelled"
	StatusArchived   = "archived"
	StatusPending    = "pending"
)

// Publish behaviours of an audience: what its versions become once processed.
const (
	BehaviorPublish = "publish"
	BehaviorDraft   = "draft"
)

// Audience is a targeted experience of a page.
type Audience struct {
	ID                             string
	TenantID                       string
	PageID                         string
	ComputedName                   string
	CustomName                     *string
	Status                         string
	Flags                          []string
	IsNewPageAgent                 bool
	PersonID                       *string
	PersonRouteKey                 *string
	ActionFormIDOverride           *string
	ActionFormInstructionsOverride *string
	ActionURLOverride              *string
	SupplementaryContext           *string
	MetadataOverride               *Metadata
	PublishBehavior                string
	LatestVersion                  *Version
	PublishedVersion               *Version
	// PageMetadata is the page's metadata, read with the audience for effectiveMetadata.
	PageMetadata *Metadata
	CreatedAt    time.Time
	UpdatedAt    time.Time
	ArchivedAt   *time.Time
}

// EffectiveName is customName when set, else computedName.
func (a *Audience) EffectiveName() string {
	if a.CustomName != nil {
		return *a.CustomName
	}
	return a.ComputedName
}

// EffectiveMetadata is the page's metadata overlaid with the audience's override.
func (a *Audience) EffectiveMetadata() *Metadata { return Overlay(a.PageMetadata, a.MetadataOverride) }

// AudiencePatch is a partial update; Set* flags distinguish "clear" from "leave alone".
type AudiencePatch struct {
	SetCustomName                     bool
	CustomName                        *string
	SetSupplementaryContext           bool
	SupplementaryContext              *string
	SetActionFormIDOverride           bool
	ActionFormIDOverride              *string
	SetActionFormInstructionsOverride bool
	ActionFormInstructionsOverride    *string
	SetActionURLOverride              bool
	ActionURLOverride                 *string
	SetMetadataOverride               bool
	MetadataOverride                  *Metadata
	PublishBehavior                   *string
}

// Apply changes a by p.
func (a *Audience) Apply(p AudiencePatch, now time.Time) {
	if p.SetCustomName {
		a.CustomName = p.CustomName
	}
	if p.SetSupplementaryContext {
		a.SupplementaryContext = p.SupplementaryContext
	}
	if p.SetActionFormIDOverride {
		a.ActionFormIDOverride = p.ActionFormIDOverride
	}
	if p.SetActionFormInstructionsOverride {
		a.ActionFormInstructionsOverride = p.ActionFormInstructionsOverride
	}
	if p.SetActionURLOverride {
		a.ActionURLOverride = p.ActionURLOverride
	}
	if p.SetMetadataOverride {
		a.MetadataOverride = p.MetadataOverride
	}
	if p.PublishBehavior != nil {
		a.PublishBehavior = *p.PublishBehavior
	}
	a.UpdatedAt = now
}

// Archive archives a (false when it already was).
func (a *Audience) Archive(now time.Time) bool {
	if a.ArchivedAt != nil {
		return false
	}
	a.Status, a.ArchivedAt, a.UpdatedAt = StatusArchived, &now, now
	return true
}

// AudienceName is the computed name of a page's nth audience.
func AudienceName(n int64) string { return fmt.Sprintf("Audience %d", n) }

// Version is one generated state of an audience.
type Version struct {
	ID                   string
	TenantID             string
	PageID               string
	AudienceID           string
	VersionNumber        int64
	Status               string
	IsNewPageAgent       bool
	SupplementaryContext *string
	OperationKey         *string
	PublishOnComplete    bool
	Snapshot             *Snapshot
	QueueDurationMs      *float64
	Attempts             int
	CreatedAt            time.Time
	QueuedAt             *time.Time
	ProcessingAt         *time.Time
	BecameDraftAt        *time.Time
	CancelledAt          *time.Time
	ObsoleteAt           *time.Time
	PublishedAt          *time.Time
	ArchivedAt           *time.Time
}

// Snapshot is what processing produced for a version: the audience as the version shows it.
// The AI generation behind a real page agent is out of scope; the snapshot is the
// deterministic state the generation would start from.
type Snapshot struct {
	PageTitle                      string    `json:"pageTitle"`
	PageContext                    string    `json:"pageContext"`
	ComputedName                   string    `json:"computedName"`
	CustomName                     *string   `json:"customName"`
	EffectiveName                  string    `json:"effectiveName"`
	SupplementaryContext           *string   `json:"supplementaryContext"`
	ActionFormIDOverride           *string   `json:"actionFormIdOverride"`
	ActionFormInstructionsOverride *string   `json:"actionFormInstructionsOverride"`
	ActionURLOverride              *string   `json:"actionUrlOverride"`
	EffectiveMetadata              *Metadata `json:"effectiveMetadata,omitempty"`
	AppliedChangeIDs               []string  `json:"appliedChangeIds"`
}

// Context field names a message change may propose a value for.
const (
	FieldSupplementaryContext = "currentSupplementaryContext"
	FieldMetaTitle            = "currentMetaTitle"
	FieldMetaDescription      = "currentMetaDescription"
	FieldMetaKeywords         = "currentMetaKeywords"
)

// ChangeFields lists the fields a change may name.
var ChangeFields = []string{FieldSupplementaryContext, FieldMetaTitle, FieldMetaDescription, FieldMetaKeywords}

// Context is the editing context of an audience: the current values changes act on.
type Context struct {
	AudienceID                  string
	PageID                      string
	CurrentSupplementaryContext string
	CurrentMetaTitle            string
	CurrentMetaDescription      string
	CurrentMetaKeywords         string
	PageContext                 string
}

// ContextOf returns the editing context of a (with its page's context text).
func ContextOf(a *Audience, pageContext string) Context {
	c := Context{AudienceID: a.ID, PageID: a.PageID, PageContext: pageContext}
	if a.SupplementaryContext != nil {
		c.CurrentSupplementaryContext = *a.SupplementaryContext
	}
	if m := a.EffectiveMetadata(); m != nil {
		if m.Title != nil {
			c.CurrentMetaTitle = *m.Title
		}
		if m.Description != nil {
			c.CurrentMetaDescription = *m.Description
		}
		c.CurrentMetaKeywords = strings.Join(m.Keywords, ", ")
	}
	return c
}

// Value returns the current value of a change field.
func (c Context) Value(field string) string {
	switch field {
	case FieldSupplementaryContext:
		return c.CurrentSupplementaryContext
	case FieldMetaTitle:
		return c.CurrentMetaTitle
	case FieldMetaDescription:
		return c.CurrentMetaDescription
	case FieldMetaKeywords:
		return c.CurrentMetaKeywords
	}
	return ""
}

// ContextChange is a proposed new value of a context field (a message's change).
type ContextChange struct {
	ID            string
	MessageID     string
	Field         string
	PreviousValue string
	NewValue      string
	Applied       bool
	CreatedAt     time.Time
}

// Bounds of the values a change may propose: those of the audience field it lands in
// (the metadata's title, description and keywords), so an applied change never leaves
// the audience with a value its own update would refuse. A supplementary context may
// hold what any newValue may (20000 characters, the document's maxLength of newValue).
const (
	MaxMetaTitle       = 500
	MaxMetaDescription = 2000
	MaxKeywords        = 50
	MaxKeywordLen      = 200
)

// splitKeywords splits a comma-separated keyword list, dropping empty entries.
func splitKeywords(v string) []string {
	out := []string{}
	for _, k := range strings.Split(v, ",") {
		if k = strings.TrimSpace(k); k != "" {
			out = append(out, k)
		}
	}
	return out
}

// CheckChange reports, as a sentence, why value cannot be proposed for field ("" when it
// can): a rule across a change's two fields, which the document states in words. Lengths
// count characters, as the document's do.
func CheckChange(field, value string) string {
	n := utf8.RuneCountInString(value)
	switch field {
	case FieldMetaTitle:
		if n > MaxMetaTitle {
			return fmt.Sprintf("A meta title has at most %d characters", MaxMetaTitle)
		}
	case FieldMetaDescription:
		if n > MaxMetaDescription {
			return fmt.Sprintf("A meta description has at most %d characters", MaxMetaDescription)
		}
	case FieldMetaKeywords:
		ks := splitKeywords(value)
		if len(ks) > MaxKeywords {
			return fmt.Sprintf("At most %d comma-separated keywords", MaxKeywords)
		}
		for _, k := range ks {
			if utf8.RuneCountInString(k) > MaxKeywordLen {
				return fmt.Sprintf("A keyword has at most %d characters", MaxKeywordLen)
			}
		}
	}
	return ""
}

// ApplyChange sets the audience field a change names.
func (a *Audience) ApplyChange(c ContextChange) {
	v := c.NewValue
	if c.Field == FieldSupplementaryContext {
		if v == "" {
			a.SupplementaryContext = nil
		} else {
			a.SupplementaryContext = &v
		}
		return
	}
	if a.MetadataOverride == nil {
		a.MetadataOverride = &Metadata{}
	}
	m := *a.MetadataOverride
	switch c.Field {
	case FieldMetaTitle:
		m.Title = &v
	case FieldMetaDescription:
		m.Description = &v
	case FieldMetaKeywords:
		m.Keywords = splitKeywords(v)
	}
	a.MetadataOverride = &m
}

// Message is one message of an audience's editing conversation.
type Message struct {
	ID            string
	AudienceID    string
	Content       string
	HasSnapshot   bool
	IsInterrupted bool
	Changes       []ContextChange
	CreatedAt     time.Time
}

// Conversation is the editing conversation of an audience.
type Conversation struct {
	ID                 string
	AudienceID         string
	PublishedMessageID *string
	CreatedAt          time.Time
	UpdatedAt          time.Time
}

// Bounds of an audience's conversation: how many messages it holds (one more is
// refused) and how many bytes of text (contents and change values) its read returns,
// newest messages first (at least one), so the answer stays near 1 MiB.
const (
	MaxMessagesPerAudience = 100
	MaxMessagesReadBytes   = 1 << 20
)

// Messages is the messages read of an audience.
type Messages struct {
	Conversation *Conversation
	// Messages are the newest that fit in MaxMessagesReadBytes, oldest first.
	Messages []Message
	// Omitted counts the older messages left out.
	Omitted        int
	Context        Context
	PendingChanges []ContextChange
}

// Snap builds the snapshot of a after its pending changes were applied.
func Snap(a *Audience, pageTitle, pageContext string, applied []string) Snapshot {
	if applied == nil {
		applied = []string{}
	}
	return Snapshot{PageTitle: pageTitle, PageContext: pageContext, ComputedName: a.ComputedName,
		CustomName: a.CustomName, EffectiveName: a.EffectiveName(), SupplementaryContext: a.SupplementaryContext,
		ActionFormIDOverride: a.ActionFormIDOverride, ActionFormInstructionsOverride: a.ActionFormInstructionsOverride,
		ActionURLOverride: a.ActionURLOverride, EffectiveMetadata: a.EffectiveMetadata(), AppliedChangeIDs: applied}
}
