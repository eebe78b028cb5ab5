package ports

import (
	"github.com/customerapi/platform/api/apitypes"
	"github.com/customerapi/platform/libs/pagination"
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

// --- response shapes: the document's Page, Audience, AudienceVersion, AudienceMessage,
// AudienceMessages and AudienceChange. A page's nav link type, script description and enabled,
// and logo image fields are "" or false when not given and always answered, so always set.

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// sized makes a slice of n elements of the (anonymous) element type of its first argument.
func sized[T any](_ []T, n int) []T { return make([]T, n) }

// alloc points *p at a new zero value of its (anonymous) type and returns it.
func alloc[T any](p **T) *T {
	*p = new(T)
	return *p
}

// listOrNil is a non-empty list, or nil (unset) when empty, as the domain's omitempty lists were.
func listOrNil(s []string) *[]string {
	if len(s) == 0 {
		return nil
	}
	return &s
}

func viewMetadata(m *domain.Metadata) *apitypes.PagesMetadata {
	if m == nil {
		return nil
	}
	return &apitypes.PagesMetadata{Title: m.Title, Description: m.Description, Keywords: listOrNil(m.Keywords), Author: m.Author,
		Robots: listOrNil(m.Robots), CanonicalUrl: m.CanonicalURL, OgTitle: m.OgTitle, OgDescription: m.OgDescription,
		OgImageUrl: m.OgImageURL, OgImageFileId: m.OgImageFileID, OgImageAlt: m.OgImageAlt, OgSiteName: m.OgSiteName,
		OgUrl: m.OgURL, TwitterTitle: m.TwitterTitle, TwitterDescription: m.TwitterDescription,
		TwitterImageUrl: m.TwitterImageURL, TwitterImageFileId: m.TwitterImageFileID, TwitterImageAlt: m.TwitterImageAlt,
		TwitterSite: m.TwitterSite, TwitterCreator: m.TwitterCreator, ThemeColor: m.ThemeColor}
}

func viewWidget(w domain.ActionCardWidget) apitypes.PageActionCardWidget {
	out := apitypes.PageActionCardWidget{Type: w.Type, Title: w.Title}
	out.Logos = sized(out.Logos, len(w.Logos))
	for i, l := range w.Logos {
		out.Logos[i].Image.AltText, out.Logos[i].Image.Url = &l.Image.AltText, &l.Image.URL
		out.Logos[i].Image.FileId, out.Logos[i].Image.AssetId = &l.Image.FileID, &l.Image.AssetID
	}
	return out
}

func viewFooterLink(f domain.FooterLink) apitypes.PageFooterLink {
	out := apitypes.PageFooterLink{Id: f.ID, Title: f.Title}
	out.Links = sized(out.Links, len(f.Links))
	for i, l := range f.Links {
		out.Links[i].Id, out.Links[i].Text, out.Links[i].Url = l.ID, l.Text, l.URL
	}
	return out
}

func viewPage(p domain.Page) apitypes.Page {
	return apitypes.Page{PageId: p.ID, Name: p.Name, Title: p.Title, PageContext: p.PageContext, BrandId: p.BrandID,
		PageType: apitypes.PageType(p.PageType), Status: apitypes.PageStatus(p.Status), Flags: orEmpty(p.Flags),
		AudiencesCount: int(p.AudiencesCount),
		Actions: pagination.Map(p.Actions, func(a domain.Action) apitypes.PageAction {
			return apitypes.PageAction{ActionId: a.ActionID, ActionIndex: a.ActionIndex, Purpose: a.Purpose,
				ButtonTitle: a.ButtonTitle, ActionType: a.ActionType, Url: a.URL}
		}),
		ActionCardWidgets: pagination.Map(p.ActionCardWidgets, viewWidget), FooterLinks: pagination.Map(p.FooterLinks, viewFooterLink),
		NavLinks: pagination.Map(p.NavLinks, func(n domain.NavLink) apitypes.PageNavLink {
			return apitypes.PageNavLink{Id: n.ID, Text: n.Text, Url: n.URL, Type: &n.Type}
		}),
		Scripts: pagination.Map(p.Scripts, func(s domain.Script) apitypes.PageScript {
			return apitypes.PageScript{Name: s.Name, Description: &s.Description, Content: s.Content, Enabled: &s.Enabled}
		}),
		HeaderActionId: p.HeaderActionID, Metadata: viewMetadata(p.Metadata),
		CreatedAt: timestamp.Format(p.CreatedAt), UpdatedAt: timestamp.Format(p.UpdatedAt),
		ArchivedAt: timestamp.FormatPtr(p.ArchivedAt), DeletedAt: timestamp.FormatPtr(p.DeletedAt)}
}

func viewVersion(v *domain.Version, withSnapshot bool) *apitypes.AudienceVersion {
	if v == nil {
		return nil
	}
	out := &apitypes.AudienceVersion{VersionId: v.ID, AudienceId: v.AudienceID, VersionNumber: int(v.VersionNumber),
		Status: apitypes.AudienceStatus(v.Status), IsNewPageAgent: v.IsNewPageAgent, SupplementaryContext: v.SupplementaryContext,
		QueueDurationMs: v.QueueDurationMs, CreatedAt: timestamp.Format(v.CreatedAt), BecameDraftAt: timestamp.FormatPtr(v.BecameDraftAt),
		CancelledAt: timestamp.FormatPtr(v.CancelledAt), ObsoleteAt: timestamp.FormatPtr(v.ObsoleteAt),
		PublishedAt: timestamp.FormatPtr(v.PublishedAt), QueuedAt: timestamp.FormatPtr(v.QueuedAt),
		ArchivedAt: timestamp.FormatPtr(v.ArchivedAt)}
	if s := v.Snapshot; withSnapshot && s != nil {
		out.Snapshot = &apitypes.AudienceVersionSnapshot{PageTitle: s.PageTitle, PageContext: s.PageContext,
			ComputedName: s.ComputedName, CustomName: s.CustomName, EffectiveName: s.EffectiveName,
			SupplementaryContext: s.SupplementaryContext, ActionFormIdOverride: s.ActionFormIDOverride,
			ActionFormInstructionsOverride: s.ActionFormInstructionsOverride, ActionUrlOverride: s.ActionURLOverride,
			EffectiveMetadata: viewMetadata(s.EffectiveMetadata), AppliedChangeIds: s.AppliedChangeIDs}
	}
	return out
}

func viewAudience(a domain.Audience) apitypes.Audience {
	return apitypes.Audience{AudienceId: a.ID, PageId: a.PageID, ComputedName: a.ComputedName, CustomName: a.CustomName,
		EffectiveName: a.EffectiveName(), Status: apitypes.AudienceStatus(a.Status), Flags: orEmpty(a.Flags),
		IsNewPageAgent: a.IsNewPageAgent, PersonId: a.PersonID, PersonRouteKey: a.PersonRouteKey,
		ActionFormIdOverride: a.ActionFormIDOverride, ActionFormInstructionsOverride: a.ActionFormInstructionsOverride,
		ActionUrlOverride: a.ActionURLOverride, SupplementaryContext: a.SupplementaryContext,
		PublishBehavior: apitypes.AudiencePublishBehavior(a.PublishBehavior), LatestVersion: viewVersion(a.LatestVersion, false),
		PublishedVersion: viewVersion(a.PublishedVersion, false), EffectiveMetadata: viewMetadata(a.EffectiveMetadata()),
		MetadataOverride: viewMetadata(a.MetadataOverride), CreatedAt: timestamp.Format(a.CreatedAt),
		ArchivedAt: timestamp.FormatPtr(a.ArchivedAt)}
}

func viewChanges(cs []domain.ContextChange) []apitypes.AudienceChange {
	return pagination.Map(cs, func(c domain.ContextChange) apitypes.AudienceChange {
		return apitypes.AudienceChange{ChangeId: c.ID, Field: apitypes.AudienceChangeField(c.Field), PreviousValue: c.PreviousValue,
			NewValue: c.NewValue}
	})
}

// viewMessage answers the message's time as Unix milliseconds (a float64 this size prints as an integer).
func viewMessage(m domain.Message) apitypes.AudienceMessage {
	return apitypes.AudienceMessage{MessageId: m.ID, Content: m.Content, Timestamp: float64(m.CreatedAt.UnixMilli()),
		HasSnapshot: m.HasSnapshot, IsInterrupted: m.IsInterrupted, Changes: viewChanges(m.Changes)}
}

func viewMessages(m domain.Messages) apitypes.AudienceMessages {
	out := apitypes.AudienceMessages{Messages: pagination.Map(m.Messages, viewMessage), MessagesOmitted: &m.Omitted,
		PendingChanges: viewChanges(m.PendingChanges)}
	x, ctx := m.Context, &out.Context
	ctx.AudienceId, ctx.PageId, ctx.PageContext = x.AudienceID, x.PageID, x.PageContext
	ctx.CurrentSupplementaryContext, ctx.CurrentMetaTitle = x.CurrentSupplementaryContext, x.CurrentMetaTitle
	ctx.CurrentMetaDescription, ctx.CurrentMetaKeywords = x.CurrentMetaDescription, x.CurrentMetaKeywords
	if c := m.Conversation; c != nil {
		conv := alloc(&out.Conversation)
		conv.ConversationId, conv.AudienceId, conv.PublishedMessageId = c.ID, c.AudienceID, c.PublishedMessageID
		conv.CreatedAt, conv.UpdatedAt = timestamp.Format(c.CreatedAt), timestamp.Format(c.UpdatedAt)
	}
	return out
}
