package ports

import (
	"github.com/customerapi/platform/api/apitypes"
	"github.com/customerapi/platform/libs/request"
	"github.com/customerapi/platform/libs/timestamp"
	"github.com/customerapi/platform/services/pages/internal/domain"
)

// --- request shapes
//
// The OpenAPI document (api/openapi.yaml: PageCreate, PageUpdate, AudienceCreate, ...)
// states the rules of these bodies and has judged each body before a handler runs:
// required fields, types, lengths, counts, enums, URL patterns, unknown fields. The rules
// it cannot state are the domain's: unique action IDs and a headerActionId that names an
// action (domain.Page.Check), and what a message change may propose (domain.CheckChange).

// A metadata object (a page's metadata, an audience's metadataOverride) and a footer
// link group decode into the domain's types (the document's PagesMetadataOverride
// leaves out the image URL and file ID fields, and has refused them already).

type actionIn struct {
	ActionID    string   `json:"actionId"`
	ActionIndex *float64 `json:"actionIndex"`
	Purpose     *string  `json:"purpose"`
	ButtonTitle string   `json:"buttonTitle"`
	ActionType  *string  `json:"actionType"`
	URL         *string  `json:"url"`
}

type imageIn struct {
	AltText *string `json:"altText"`
	URL     *string `json:"url"`
	FileID  *string `json:"fileId"`
	AssetID *string `json:"assetId"`
}

type logoIn struct {
	Image imageIn `json:"image"`
}

type widgetIn struct {
	Type  string   `json:"type"`
	Title *string  `json:"title"`
	Logos []logoIn `json:"logos"`
}

type navLinkIn struct {
	ID   string  `json:"id"`
	Text string  `json:"text"`
	URL  string  `json:"url"`
	Type *string `json:"type"`
}

type scriptIn struct {
	Name        string  `json:"name"`
	Description *string `json:"description"`
	Content     string  `json:"content"`
	Enabled     *bool   `json:"enabled"`
}

type pageCreate struct {
	Name              string              `json:"name"`
	Title             string              `json:"title"`
	PageContext       *string             `json:"pageContext"`
	BrandID           *string             `json:"brandId"`
	PageType          string              `json:"pageType"`
	Flags             []string            `json:"flags"`
	Actions           []actionIn          `json:"actions"`
	ActionCardWidgets []widgetIn          `json:"actionCardWidgets"`
	FooterLinks       []domain.FooterLink `json:"footerLinks"`
	NavLinks          []navLinkIn         `json:"navLinks"`
	Scripts           []scriptIn          `json:"scripts"`
	HeaderActionID    *string             `json:"headerActionId"`
	Metadata          *domain.Metadata    `json:"metadata"`
}

type pageUpdate struct {
	Name              *string                           `json:"name"`
	Title             *string                           `json:"title"`
	PageContext       *string                           `json:"pageContext"`
	BrandID           *string                           `json:"brandId"`
	PageType          *string                           `json:"pageType"`
	Flags             *[]string                         `json:"flags"`
	Actions           *[]actionIn                       `json:"actions"`
	ActionCardWidgets *[]widgetIn                       `json:"actionCardWidgets"`
	FooterLinks       *[]domain.FooterLink              `json:"footerLinks"`
	NavLinks          *[]navLinkIn                      `json:"navLinks"`
	Scripts           *[]scriptIn                       `json:"scripts"`
	HeaderActionID    request.Nullable[string]          `json:"headerActionId"`
	Metadata          request.Nullable[domain.Metadata] `json:"metadata"`
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func actionsOf(in []actionIn) []domain.Action {
	out := make([]domain.Action, len(in))
	for i, a := range in {
		idx := float64(i)
		if a.ActionIndex != nil {
			idx = *a.ActionIndex
		}
		out[i] = domain.Action{ActionID: a.ActionID, ActionIndex: idx, Purpose: str(a.Purpose), ButtonTitle: a.ButtonTitle,
			ActionType: str(a.ActionType), URL: str(a.URL)}
	}
	return out
}

func widgetsOf(in []widgetIn) []domain.ActionCardWidget {
	out := make([]domain.ActionCardWidget, len(in))
	for i, w := range in {
		out[i] = domain.ActionCardWidget{Type: w.Type, Title: str(w.Title), Logos: make([]domain.Logo, len(w.Logos))}
		for j, l := range w.Logos {
			out[i].Logos[j] = domain.Logo{Image: domain.Image{AltText: str(l.Image.AltText), URL: str(l.Image.URL),
				FileID: str(l.Image.FileID), AssetID: str(l.Image.AssetID)}}
		}
	}
	return out
}

func navOf(in []navLinkIn) []domain.NavLink {
	out := make([]domain.NavLink, len(in))
	for i, n := range in {
		out[i] = domain.NavLink{ID: n.ID, Text: n.Text, URL: n.URL, Type: str(n.Type)}
	}
	return out
}

func scriptsOf(in []scriptIn) []domain.Script {
	out := make([]domain.Script, len(in))
	for i, s := range in {
		out[i] = domain.Script{Name: s.Name, Description: str(s.Description), Content: s.Content, Enabled: s.Enabled == nil || *s.Enabled}
	}
	return out
}

func flagsOf(in []string) []string {
	if in == nil {
		return []string{}
	}
	return in
}

func (in *pageCreate) domain() domain.Page {
	return domain.Page{Name: in.Name, Title: in.Title, PageContext: str(in.PageContext), BrandID: str(in.BrandID),
		PageType: in.PageType, Flags: flagsOf(in.Flags), Actions: actionsOf(in.Actions),
		ActionCardWidgets: widgetsOf(in.ActionCardWidgets), FooterLinks: in.FooterLinks,
		NavLinks: navOf(in.NavLinks), Scripts: scriptsOf(in.Scripts), HeaderActionID: in.HeaderActionID,
		Metadata: in.Metadata}
}

func mapPtr[T, U any](p *[]T, f func([]T) []U) *[]U {
	if p == nil {
		return nil
	}
	out := f(*p)
	return &out
}

func (in *pageUpdate) domain() domain.PagePatch {
	return domain.PagePatch{Name: in.Name, Title: in.Title, PageContext: in.PageContext, BrandID: in.BrandID,
		PageType: in.PageType, Actions: mapPtr(in.Actions, actionsOf), ActionCardWidgets: mapPtr(in.ActionCardWidgets, widgetsOf),
		FooterLinks: in.FooterLinks, NavLinks: mapPtr(in.NavLinks, navOf), Scripts: mapPtr(in.Scripts, scriptsOf),
		Flags: mapPtr(in.Flags, flagsOf), SetHeaderAction: in.HeaderActionID.Set, HeaderActionID: in.HeaderActionID.Ptr(),
		SetMetadata: in.Metadata.Set, Metadata: in.Metadata.Ptr()}
}

type audienceCreate struct {
	PublishBehavior                *string          `json:"publishBehavior"`
	ActionFormIDOverride           *string          `json:"actionFormIdOverride"`
	ActionFormInstructionsOverride *string          `json:"actionFormInstructionsOverride"`
	ActionURLOverride              *string          `json:"actionUrlOverride"`
	CustomName                     *string          `json:"customName"`
	MetadataOverride               *domain.Metadata `json:"metadataOverride"`
	SupplementaryContext           *string          `json:"supplementaryContext"`
}

type audienceUpdate struct {
	PublishBehavior                *string                           `json:"publishBehavior"`
	ActionFormIDOverride           request.Nullable[string]          `json:"actionFormIdOverride"`
	ActionFormInstructionsOverride request.Nullable[string]          `json:"actionFormInstructionsOverride"`
	ActionURLOverride              request.Nullable[string]          `json:"actionUrlOverride"`
	CustomName                     request.Nullable[string]          `json:"customName"`
	MetadataOverride               request.Nullable[domain.Metadata] `json:"metadataOverride"`
	SupplementaryContext           request.Nullable[string]          `json:"supplementaryContext"`
}

func (in *audienceUpdate) domain() domain.AudiencePatch {
	return domain.AudiencePatch{PublishBehavior: in.PublishBehavior,
		SetCustomName: in.CustomName.Set, CustomName: in.CustomName.Ptr(),
		SetSupplementaryContext: in.SupplementaryContext.Set, SupplementaryContext: in.SupplementaryContext.Ptr(),
		SetActionFormIDOverride: in.ActionFormIDOverride.Set, ActionFormIDOverride: in.ActionFormIDOverride.Ptr(),
		SetActionFormInstructionsOverride: in.ActionFormInstructionsOverride.Set,
		ActionFormInstructionsOverride:    in.ActionFormInstructionsOverride.Ptr(),
		SetActionURLOverride:              in.ActionURLOverride.Set, ActionURLOverride: in.ActionURLOverride.Ptr(),
		SetMetadataOverride: in.MetadataOverride.Set, MetadataOverride: in.MetadataOverride.Ptr()}
}

type versionCreate struct {
	OperationKey *string `json:"operationKey"`
}

type changeIn struct {
	Field    string `json:"field"`
	NewValue string `json:"newValue"`
}

type messageCreate struct {
	Content string     `json:"content"`
	Changes []changeIn `json:"changes"`
}

// --- response shapes
//
// A change is the document's AudienceChange. The others stay hand-written while api/apitypes
// types the document's `type: number` fields (actionIndex, queueDurationMs, a message's
// timestamp) as float32, which would round the values these answers carry.

type pageView struct {
	PageID            string                    `json:"pageId"`
	Name              string                    `json:"name"`
	Title             string                    `json:"title"`
	PageContext       string                    `json:"pageContext"`
	BrandID           string                    `json:"brandId"`
	PageType          string                    `json:"pageType"`
	Status            string                    `json:"status"`
	Flags             []string                  `json:"flags"`
	AudiencesCount    int64                     `json:"audiencesCount"`
	Actions           []domain.Action           `json:"actions"`
	ActionCardWidgets []domain.ActionCardWidget `json:"actionCardWidgets"`
	FooterLinks       []domain.FooterLink       `json:"footerLinks"`
	NavLinks          []domain.NavLink          `json:"navLinks"`
	Scripts           []domain.Script           `json:"scripts"`
	HeaderActionID    *string                   `json:"headerActionId,omitempty"`
	Metadata          *domain.Metadata          `json:"metadata,omitempty"`
	CreatedAt         string                    `json:"createdAt"`
	UpdatedAt         string                    `json:"updatedAt"`
	ArchivedAt        *string                   `json:"archivedAt"`
	DeletedAt         *string                   `json:"deletedAt"`
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func viewPage(p domain.Page) pageView {
	widgets := orEmpty(p.ActionCardWidgets)
	for i := range widgets {
		widgets[i].Logos = orEmpty(widgets[i].Logos)
	}
	footer := orEmpty(p.FooterLinks)
	for i := range footer {
		footer[i].Links = orEmpty(footer[i].Links)
	}
	return pageView{PageID: p.ID, Name: p.Name, Title: p.Title, PageContext: p.PageContext, BrandID: p.BrandID,
		PageType: p.PageType, Status: p.Status, Flags: orEmpty(p.Flags), AudiencesCount: p.AudiencesCount,
		Actions: orEmpty(p.Actions), ActionCardWidgets: widgets, FooterLinks: footer, NavLinks: orEmpty(p.NavLinks),
		Scripts: orEmpty(p.Scripts), HeaderActionID: p.HeaderActionID, Metadata: p.Metadata,
		CreatedAt: timestamp.Format(p.CreatedAt), UpdatedAt: timestamp.Format(p.UpdatedAt),
		ArchivedAt: timestamp.FormatPtr(p.ArchivedAt), DeletedAt: timestamp.FormatPtr(p.DeletedAt)}
}

type versionView struct {
	VersionID            string           `json:"versionId"`
	AudienceID           string           `json:"audienceId"`
	VersionNumber        int64            `json:"versionNumber"`
	Status               string           `json:"status"`
	IsNewPageAgent       bool             `json:"isNewPageAgent"`
	SupplementaryContext *string          `json:"supplementaryContext"`
	QueueDurationMs      *float64         `json:"queueDurationMs"`
	CreatedAt            string           `json:"createdAt"`
	BecameDraftAt        *string          `json:"becameDraftAt"`
	CancelledAt          *string          `json:"cancelledAt"`
	ObsoleteAt           *string          `json:"obsoleteAt"`
	PublishedAt          *string          `json:"publishedAt"`
	QueuedAt             *string          `json:"queuedAt"`
	ArchivedAt           *string          `json:"archivedAt"`
	Snapshot             *domain.Snapshot `json:"snapshot,omitempty"`
}

func viewVersion(v *domain.Version, withSnapshot bool) *versionView {
	if v == nil {
		return nil
	}
	out := &versionView{VersionID: v.ID, AudienceID: v.AudienceID, VersionNumber: v.VersionNumber, Status: v.Status,
		IsNewPageAgent: v.IsNewPageAgent, SupplementaryContext: v.SupplementaryContext, QueueDurationMs: v.QueueDurationMs,
		CreatedAt: timestamp.Format(v.CreatedAt), BecameDraftAt: timestamp.FormatPtr(v.BecameDraftAt),
		CancelledAt: timestamp.FormatPtr(v.CancelledAt), ObsoleteAt: timestamp.FormatPtr(v.ObsoleteAt),
		PublishedAt: timestamp.FormatPtr(v.PublishedAt), QueuedAt: timestamp.FormatPtr(v.QueuedAt),
		ArchivedAt: timestamp.FormatPtr(v.ArchivedAt)}
	if withSnapshot {
		out.Snapshot = v.Snapshot
	}
	return out
}

type audienceView struct {
	AudienceID                     string           `json:"audienceId"`
	PageID                         string           `json:"pageId"`
	ComputedName                   string           `json:"computedName"`
	CustomName                     *string          `json:"customName"`
	EffectiveName                  string           `json:"effectiveName"`
	Status                         string           `json:"status"`
	Flags                          []string         `json:"flags"`
	IsNewPageAgent                 bool             `json:"isNewPageAgent"`
	PersonID                       *string          `json:"personId"`
	PersonRouteKey                 *string          `json:"personRouteKey"`
	ActionFormIDOverride           *string          `json:"actionFormIdOverride"`
	ActionFormInstructionsOverride *string          `json:"actionFormInstructionsOverride"`
	ActionURLOverride              *string          `json:"actionUrlOverride"`
	SupplementaryContext           *string          `json:"supplementaryContext"`
	PublishBehavior                string           `json:"publishBehavior"`
	LatestVersion                  *versionView     `json:"latestVersion"`
	PublishedVersion               *versionView     `json:"publishedVersion"`
	EffectiveMetadata              *domain.Metadata `json:"effectiveMetadata,omitempty"`
	MetadataOverride               *domain.Metadata `json:"metadataOverride,omitempty"`
	CreatedAt                      string           `json:"createdAt"`
	ArchivedAt                     *string          `json:"archivedAt"`
}

func viewAudience(a domain.Audience) audienceView {
	return audienceView{AudienceID: a.ID, PageID: a.PageID, ComputedName: a.ComputedName, CustomName: a.CustomName,
		EffectiveName: a.EffectiveName(), Status: a.Status, Flags: orEmpty(a.Flags), IsNewPageAgent: a.IsNewPageAgent,
		PersonID: a.PersonID, PersonRouteKey: a.PersonRouteKey, ActionFormIDOverride: a.ActionFormIDOverride,
		ActionFormInstructionsOverride: a.ActionFormInstructionsOverride, ActionURLOverride: a.ActionURLOverride,
		SupplementaryContext: a.SupplementaryContext, PublishBehavior: a.PublishBehavior,
		LatestVersion: viewVersion(a.LatestVersion, false), PublishedVersion: viewVersion(a.PublishedVersion, false),
		EffectiveMetadata: a.EffectiveMetadata(), MetadataOverride: a.MetadataOverride,
		CreatedAt: timestamp.Format(a.CreatedAt), ArchivedAt: timestamp.FormatPtr(a.ArchivedAt)}
}

func viewChanges(cs []domain.ContextChange) []apitypes.AudienceChange {
	out := make([]apitypes.AudienceChange, len(cs))
	for i, c := range cs {
		out[i] = apitypes.AudienceChange{ChangeId: c.ID, Field: apitypes.AudienceChangeField(c.Field), PreviousValue: c.PreviousValue,
			NewValue: c.NewValue}
	}
	return out
}

type messageView struct {
	MessageID     string                    `json:"messageId"`
	Content       string                    `json:"content"`
	Timestamp     int64                     `json:"timestamp"`
	HasSnapshot   bool                      `json:"hasSnapshot"`
	IsInterrupted bool                      `json:"isInterrupted"`
	Changes       []apitypes.AudienceChange `json:"changes"`
}

func viewMessage(m domain.Message) messageView {
	return messageView{MessageID: m.ID, Content: m.Content, Timestamp: m.CreatedAt.UnixMilli(), HasSnapshot: m.HasSnapshot,
		IsInterrupted: m.IsInterrupted, Changes: viewChanges(m.Changes)}
}

type conversationView struct {
	ConversationID     string  `json:"conversationId"`
	AudienceID         string  `json:"audienceId"`
	PublishedMessageID *string `json:"publishedMessageId"`
	CreatedAt          string  `json:"createdAt"`
	UpdatedAt          string  `json:"updatedAt"`
}

type contextView struct {
	AudienceID                  string `json:"audienceId"`
	PageID                      string `json:"pageId"`
	CurrentSupplementaryContext string `json:"currentSupplementaryContext"`
	CurrentMetaTitle            string `json:"currentMetaTitle"`
	CurrentMetaDescription      string `json:"currentMetaDescription"`
	CurrentMetaKeywords         string `json:"currentMetaKeywords"`
	PageContext                 string `json:"pageContext"`
}

type messagesView struct {
	Conversation   *conversationView         `json:"conversation"`
	Messages       []messageView             `json:"messages"`
	Omitted        int                       `json:"messagesOmitted"`
	Context        contextView               `json:"context"`
	PendingChanges []apitypes.AudienceChange `json:"pendingChanges"`
}

func viewMessages(m domain.Messages) messagesView {
	out := messagesView{Messages: make([]messageView, len(m.Messages)), Omitted: m.Omitted, PendingChanges: viewChanges(m.PendingChanges),
		Context: contextView(m.Context)}
	for i, msg := range m.Messages {
		out.Messages[i] = viewMessage(msg)
	}
	if c := m.Conversation; c != nil {
		out.Conversation = &conversationView{ConversationID: c.ID, AudienceID: c.AudienceID, PublishedMessageID: c.PublishedMessageID,
			CreatedAt: timestamp.Format(c.CreatedAt), UpdatedAt: timestamp.Format(c.UpdatedAt)}
	}
	return out
}
