package ports

import (
	"github.com/customerapi/platform/libs/request"
	"github.com/customerapi/platform/libs/timestamp"
	"github.com/customerapi/platform/services/pages/internal/domain"
)

// --- request shapes (bounds: docs/api.md, "Pages")

type metadataIn struct {
	Title              *string  `json:"title" validate:"omitnil,max=500"`
	Description        *string  `json:"description" validate:"omitnil,max=2000"`
	Keywords           []string `json:"keywords" validate:"omitempty,max=50,dive,max=200"`
	Author             *string  `json:"author" validate:"omitnil,max=500"`
	Robots             []string `json:"robots" validate:"omitempty,max=20,dive,max=100"`
	CanonicalURL       *string  `json:"canonicalUrl" validate:"omitnil,max=2000"`
	OgTitle            *string  `json:"ogTitle" validate:"omitnil,max=500"`
	OgDescription      *string  `json:"ogDescription" validate:"omitnil,max=2000"`
	OgImageURL         *string  `json:"ogImageUrl" validate:"omitnil,max=2000"`
	OgImageFileID      *string  `json:"ogImageFileId" validate:"omitnil,max=200"`
	OgImageAlt         *string  `json:"ogImageAlt" validate:"omitnil,max=500"`
	OgSiteName         *string  `json:"ogSiteName" validate:"omitnil,max=500"`
	OgURL              *string  `json:"ogUrl" validate:"omitnil,max=2000"`
	TwitterTitle       *string  `json:"twitterTitle" validate:"omitnil,max=500"`
	TwitterDescription *string  `json:"twitterDescription" validate:"omitnil,max=2000"`
	TwitterImageURL    *string  `json:"twitterImageUrl" validate:"omitnil,max=2000"`
	TwitterImageFileID *string  `json:"twitterImageFileId" validate:"omitnil,max=200"`
	TwitterImageAlt    *string  `json:"twitterImageAlt" validate:"omitnil,max=500"`
	TwitterSite        *string  `json:"twitterSite" validate:"omitnil,max=500"`
	TwitterCreator     *string  `json:"twitterCreator" validate:"omitnil,max=500"`
	ThemeColor         *string  `json:"themeColor" validate:"omitnil,max=100"`
}

func (m *metadataIn) domain() *domain.Metadata {
	if m == nil {
		return nil
	}
	return &domain.Metadata{Title: m.Title, Description: m.Description, Keywords: m.Keywords, Author: m.Author,
		Robots: m.Robots, CanonicalURL: m.CanonicalURL, OgTitle: m.OgTitle, OgDescription: m.OgDescription,
		OgImageURL: m.OgImageURL, OgImageFileID: m.OgImageFileID, OgImageAlt: m.OgImageAlt, OgSiteName: m.OgSiteName,
		OgURL: m.OgURL, TwitterTitle: m.TwitterTitle, TwitterDescription: m.TwitterDescription,
		TwitterImageURL: m.TwitterImageURL, TwitterImageFileID: m.TwitterImageFileID, TwitterImageAlt: m.TwitterImageAlt,
		TwitterSite: m.TwitterSite, TwitterCreator: m.TwitterCreator, ThemeColor: m.ThemeColor}
}

// metadataOverrideIn is the metadata object of the create-audience body: the spec leaves
// out the image URL and file ID fields there.
type metadataOverrideIn struct {
	Title              *string  `json:"title" validate:"omitnil,max=500"`
	Description        *string  `json:"description" validate:"omitnil,max=2000"`
	Keywords           []string `json:"keywords" validate:"omitempty,max=50,dive,max=200"`
	Author             *string  `json:"author" validate:"omitnil,max=500"`
	Robots             []string `json:"robots" validate:"omitempty,max=20,dive,max=100"`
	CanonicalURL       *string  `json:"canonicalUrl" validate:"omitnil,max=2000"`
	OgTitle            *string  `json:"ogTitle" validate:"omitnil,max=500"`
	OgDescription      *string  `json:"ogDescription" validate:"omitnil,max=2000"`
	OgImageAlt         *string  `json:"ogImageAlt" validate:"omitnil,max=500"`
	OgSiteName         *string  `json:"ogSiteName" validate:"omitnil,max=500"`
	OgURL              *string  `json:"ogUrl" validate:"omitnil,max=2000"`
	TwitterTitle       *string  `json:"twitterTitle" validate:"omitnil,max=500"`
	TwitterDescription *string  `json:"twitterDescription" validate:"omitnil,max=2000"`
	TwitterImageAlt    *string  `json:"twitterImageAlt" validate:"omitnil,max=500"`
	TwitterSite        *string  `json:"twitterSite" validate:"omitnil,max=500"`
	TwitterCreator     *string  `json:"twitterCreator" validate:"omitnil,max=500"`
	ThemeColor         *string  `json:"themeColor" validate:"omitnil,max=100"`
}

func (m *metadataOverrideIn) domain() *domain.Metadata {
	if m == nil {
		return nil
	}
	return &domain.Metadata{Title: m.Title, Description: m.Description, Keywords: m.Keywords, Author: m.Author,
		Robots: m.Robots, CanonicalURL: m.CanonicalURL, OgTitle: m.OgTitle, OgDescription: m.OgDescription,
		OgImageAlt: m.OgImageAlt, OgSiteName: m.OgSiteName, OgURL: m.OgURL, TwitterTitle: m.TwitterTitle,
		TwitterDescription: m.TwitterDescription, TwitterImageAlt: m.TwitterImageAlt, TwitterSite: m.TwitterSite,
		TwitterCreator: m.TwitterCreator, ThemeColor: m.ThemeColor}
}

type actionIn struct {
	ActionID    string   `json:"actionId" validate:"required,max=200"`
	ActionIndex *float64 `json:"actionIndex" validate:"omitnil,min=0,max=1000"`
	Purpose     *string  `json:"purpose" validate:"omitnil,max=2000"`
	ButtonTitle string   `json:"buttonTitle" validate:"required,max=200"`
	ActionType  *string  `json:"actionType" validate:"omitnil,max=100"`
	URL         *string  `json:"url" validate:"omitnil,max=2000"`
}

type imageIn struct {
	AltText *string `json:"altText" validate:"omitnil,max=500"`
	URL     *string `json:"url" validate:"omitnil,max=2000"`
	FileID  *string `json:"fileId" validate:"omitnil,max=200"`
	AssetID *string `json:"assetId" validate:"omitnil,max=200"`
}

type logoIn struct {
	Image imageIn `json:"image" validate:"required"`
}

type widgetIn struct {
	Type  string   `json:"type" validate:"required,max=100"`
	Title *string  `json:"title" validate:"omitnil,max=500"`
	Logos []logoIn `json:"logos" validate:"omitempty,max=50,dive"`
}

type linkIn struct {
	ID   string `json:"id" validate:"required,max=200"`
	Text string `json:"text" validate:"required,max=500"`
	URL  string `json:"url" validate:"required,max=2000"`
}

type footerLinkIn struct {
	ID    string   `json:"id" validate:"required,max=200"`
	Title string   `json:"title" validate:"required,max=500"`
	Links []linkIn `json:"links" validate:"omitempty,max=50,dive"`
}

type navLinkIn struct {
	ID   string  `json:"id" validate:"required,max=200"`
	Text string  `json:"text" validate:"required,max=500"`
	URL  string  `json:"url" validate:"required,max=2000"`
	Type *string `json:"type" validate:"omitnil,max=100"`
}

type scriptIn struct {
	Name        string  `json:"name" validate:"required,max=200"`
	Description *string `json:"description" validate:"omitnil,max=2000"`
	Content     string  `json:"content" validate:"required,max=100000"`
	Enabled     *bool   `json:"enabled"`
}

const pageTypes = "oneof=inbound outbound call_followup sales_deck custom"

type pageCreate struct {
	Name              string         `json:"name" validate:"required,max=200"`
	Title             string         `json:"title" validate:"required,max=500"`
	PageContext       *string        `json:"pageContext" validate:"omitnil,max=20000"`
	BrandID           *string        `json:"brandId" validate:"omitnil,max=200"`
	PageType          string         `json:"pageType" validate:"required,oneof=inbound outbound call_followup sales_deck custom"`
	Flags             []string       `json:"flags" validate:"omitempty,max=1,unique,dive,oneof=home_page"`
	Actions           []actionIn     `json:"actions" validate:"omitempty,max=20,unique=ActionID,dive"`
	ActionCardWidgets []widgetIn     `json:"actionCardWidgets" validate:"omitempty,max=20,dive"`
	FooterLinks       []footerLinkIn `json:"footerLinks" validate:"omitempty,max=20,dive"`
	NavLinks          []navLinkIn    `json:"navLinks" validate:"omitempty,max=50,dive"`
	Scripts           []scriptIn     `json:"scripts" validate:"omitempty,max=20,dive"`
	HeaderActionID    *string        `json:"headerActionId" validate:"omitnil,min=1,max=200"`
	Metadata          *metadataIn    `json:"metadata"`
}

type pageUpdate struct {
	Name              *string                      `json:"name" validate:"omitnil,min=1,max=200"`
	Title             *string                      `json:"title" validate:"omitnil,min=1,max=500"`
	PageContext       *string                      `json:"pageContext" validate:"omitnil,max=20000"`
	BrandID           *string                      `json:"brandId" validate:"omitnil,max=200"`
	PageType          *string                      `json:"pageType" validate:"omitnil,oneof=inbound outbound call_followup sales_deck custom"`
	Flags             *[]string                    `json:"flags" validate:"omitnil,max=1,unique,dive,oneof=home_page"`
	Actions           *[]actionIn                  `json:"actions" validate:"omitnil,max=20,unique=ActionID,dive"`
	ActionCardWidgets *[]widgetIn                  `json:"actionCardWidgets" validate:"omitnil,max=20,dive"`
	FooterLinks       *[]footerLinkIn              `json:"footerLinks" validate:"omitnil,max=20,dive"`
	NavLinks          *[]navLinkIn                 `json:"navLinks" validate:"omitnil,max=50,dive"`
	Scripts           *[]scriptIn                  `json:"scripts" validate:"omitnil,max=20,dive"`
	HeaderActionID    request.Nullable[string]     `json:"headerActionId" validate:"omitnil,min=1,max=200"`
	Metadata          request.Nullable[metadataIn] `json:"metadata"`
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

func footerOf(in []footerLinkIn) []domain.FooterLink {
	out := make([]domain.FooterLink, len(in))
	for i, f := range in {
		out[i] = domain.FooterLink{ID: f.ID, Title: f.Title, Links: make([]domain.Link, len(f.Links))}
		for j, l := range f.Links {
			out[i].Links[j] = domain.Link{ID: l.ID, Text: l.Text, URL: l.URL}
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
		ActionCardWidgets: widgetsOf(in.ActionCardWidgets), FooterLinks: footerOf(in.FooterLinks),
		NavLinks: navOf(in.NavLinks), Scripts: scriptsOf(in.Scripts), HeaderActionID: in.HeaderActionID,
		Metadata: in.Metadata.domain()}
}

func mapPtr[T, U any](p *[]T, f func([]T) []U) *[]U {
	if p == nil {
		return nil
	}
	out := f(*p)
	return &out
}

func (in *pageUpdate) domain() domain.PagePatch {
	p := domain.PagePatch{Name: in.Name, Title: in.Title, PageContext: in.PageContext, BrandID: in.BrandID,
		PageType: in.PageType, Actions: mapPtr(in.Actions, actionsOf), ActionCardWidgets: mapPtr(in.ActionCardWidgets, widgetsOf),
		FooterLinks: mapPtr(in.FooterLinks, footerOf), NavLinks: mapPtr(in.NavLinks, navOf), Scripts: mapPtr(in.Scripts, scriptsOf),
		Flags: mapPtr(in.Flags, flagsOf), SetHeaderAction: in.HeaderActionID.Set, HeaderActionID: in.HeaderActionID.Ptr(),
		SetMetadata: in.Metadata.Set}
	if m := in.Metadata.Ptr(); m != nil {
		p.Metadata = m.domain()
	}
	return p
}

type audienceCreate struct {
	PublishBehavior                *string             `json:"publishBehavior" validate:"omitnil,oneof=draft publish"`
	ActionFormIDOverride           *string             `json:"actionFormIdOverride" validate:"omitnil,max=200"`
	ActionFormInstructionsOverride *string             `json:"actionFormInstructionsOverride" validate:"omitnil,max=5000"`
	ActionURLOverride              *string             `json:"actionUrlOverride" validate:"omitnil,max=2000,httpurl"`
	CustomName                     *string             `json:"customName" validate:"omitnil,min=1,max=200"`
	MetadataOverride               *metadataOverrideIn `json:"metadataOverride"`
	SupplementaryContext           *string             `json:"supplementaryContext" validate:"omitnil,min=1,max=20000"`
}

type audienceUpdate struct {
	PublishBehavior                *string                              `json:"publishBehavior" validate:"omitnil,oneof=draft publish"`
	ActionFormIDOverride           request.Nullable[string]             `json:"actionFormIdOverride" validate:"omitnil,max=200"`
	ActionFormInstructionsOverride request.Nullable[string]             `json:"actionFormInstructionsOverride" validate:"omitnil,max=5000"`
	ActionURLOverride              request.Nullable[string]             `json:"actionUrlOverride" validate:"omitnil,max=2000,httpurl"`
	CustomName                     request.Nullable[string]             `json:"customName" validate:"omitnil,min=1,max=200"`
	MetadataOverride               request.Nullable[metadataOverrideIn] `json:"metadataOverride"`
	SupplementaryContext           request.Nullable[string]             `json:"supplementaryContext" validate:"omitnil,min=1,max=20000"`
}

func (in *audienceUpdate) domain() domain.AudiencePatch {
	p := domain.AudiencePatch{PublishBehavior: in.PublishBehavior,
		SetCustomName: in.CustomName.Set, CustomName: in.CustomName.Ptr(),
		SetSupplementaryContext: in.SupplementaryContext.Set, SupplementaryContext: in.SupplementaryContext.Ptr(),
		SetActionFormIDOverride: in.ActionFormIDOverride.Set, ActionFormIDOverride: in.ActionFormIDOverride.Ptr(),
		SetActionFormInstructionsOverride: in.ActionFormInstructionsOverride.Set,
		ActionFormInstructionsOverride:    in.ActionFormInstructionsOverride.Ptr(),
		SetActionURLOverride:              in.ActionURLOverride.Set, ActionURLOverride: in.ActionURLOverride.Ptr(),
		SetMetadataOverride: in.MetadataOverride.Set}
	if m := in.MetadataOverride.Ptr(); m != nil {
		p.MetadataOverride = m.domain()
	}
	return p
}

type versionCreate struct {
	OperationKey *string `json:"operationKey" validate:"omitnil,min=1,max=128"`
}

type changeIn struct {
	Field    string `json:"field" validate:"required,oneof=currentSupplementaryContext currentMetaTitle currentMetaDescription currentMetaKeywords"`
	NewValue string `json:"newValue" validate:"max=20000"`
}

type messageCreate struct {
	Content string     `json:"content" validate:"required,max=20000"`
	Changes []changeIn `json:"changes" validate:"omitempty,max=20,dive"`
}

// --- response shapes

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

type changeView struct {
	ChangeID      string `json:"changeId"`
	Field         string `json:"field"`
	PreviousValue string `json:"previousValue"`
	NewValue      string `json:"newValue"`
}

func viewChanges(cs []domain.Change) []changeView {
	out := make([]changeView, len(cs))
	for i, c := range cs {
		out[i] = changeView{ChangeID: c.ID, Field: c.Field, PreviousValue: c.PreviousValue, NewValue: c.NewValue}
	}
	return out
}

type messageView struct {
	MessageID     string       `json:"messageId"`
	Content       string       `json:"content"`
	Timestamp     int64        `json:"timestamp"`
	HasSnapshot   bool         `json:"hasSnapshot"`
	IsInterrupted bool         `json:"isInterrupted"`
	Changes       []changeView `json:"changes"`
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
	Conversation   *conversationView `json:"conversation"`
	Messages       []messageView     `json:"messages"`
	Context        contextView       `json:"context"`
	PendingChanges []changeView      `json:"pendingChanges"`
}

func viewMessages(m domain.Messages) messagesView {
	out := messagesView{Messages: make([]messageView, len(m.Messages)), PendingChanges: viewChanges(m.PendingChanges),
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
