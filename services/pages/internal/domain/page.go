// Package domain holds the pages context's types, rules, errors and events (pages,
// audiences, versions, messages, audience sessions, page links), free of transport and
// storage concerns.
package domain

import (
	"errors"
	"fmt"
	"time"

	"github.com/customerapi/platform/libs/errkind"
)

// Page statuses.
const (
	PageDraft     = "draft"
	PagePublished = "published"
	PageArchived  = "archived"
)

// PageTypes are the allowed values of a page's pageType.
var PageTypes = []string{"inbound", "outbound", "call_followup", "sales_deck", "custom"}

// FlagHomePage is the only page and audience flag.
const FlagHomePage = "home_page"

// Errors of the pages, audiences and versions: those of a kind (libs/errkind) carry
// their answer's detail; the plain ones are the processing worker's and reach no client.
var (
	ErrPageNotFound     = errkind.NotFound.New("page not found")
	ErrAudienceNotFound = errkind.NotFound.New("audience not found")
	ErrVersionNotFound  = errkind.NotFound.New("version not found")
	ErrNotRestorable    = errkind.Conflict.New("only an archived or deleted page can be restored")
	ErrPageArchived     = errkind.Conflict.New("the page is archived; restore it first")
	ErrAudienceArchived = errkind.Conflict.New("the audience is archived")
	ErrTooManyMessages  = errkind.Conflict.New(fmt.Sprintf("the audience already has the maximum of %d messages",
		MaxMessagesPerAudience))
	ErrUnknownHeaderAct = errkind.Invalid.At("headerActionId must be the actionId of one of the page's actions",
		"headerActionId")
	ErrLeaseLost        = errors.New("the version's processing lease was taken over")
	ErrNothingToProcess = errors.New("no version is ready for processing")
	ErrGaveUp           = errors.New("the version used up its processing attempts and was cancelled")
)

// Metadata is the spec's metadata object; nil fields are absent.
type Metadata struct {
	Title              *string  `json:"title,omitempty"`
	Description        *string  `json:"description,omitempty"`
	Keywords           []string `json:"keywords,omitempty"`
	Author             *string  `json:"author,omitempty"`
	Robots             []string `json:"robots,omitempty"`
	CanonicalURL       *string  `json:"canonicalUrl,omitempty"`
	OgTitle            *string  `json:"ogTitle,omitempty"`
	OgDescription      *string  `json:"ogDescription,omitempty"`
	OgImageURL         *string  `json:"ogImageUrl,omitempty"`
	OgImageFileID      *string  `json:"ogImageFileId,omitempty"`
	OgImageAlt         *string  `json:"ogImageAlt,omitempty"`
	OgSiteName         *string  `json:"ogSiteName,omitempty"`
	OgURL              *string  `json:"ogUrl,omitempty"`
	TwitterTitle       *string  `json:"twitterTitle,omitempty"`
	TwitterDescription *string  `json:"twitterDescription,omitempty"`
	TwitterImageURL    *string  `json:"twitterImageUrl,omitempty"`
	TwitterImageFileID *string  `json:"twitterImageFileId,omitempty"`
	TwitterImageAlt    *string  `json:"twitterImageAlt,omitempty"`
	TwitterSite        *string  `json:"twitterSite,omitempty"`
	TwitterCreator     *string  `json:"twitterCreator,omitempty"`
	ThemeColor         *string  `json:"themeColor,omitempty"`
}

// Overlay returns base with every field that over sets replaced (the effective metadata).
func Overlay(base, over *Metadata) *Metadata {
	if base == nil && over == nil {
		return nil
	}
	out := Metadata{}
	if base != nil {
		out = *base
	}
	if over == nil {
		return &out
	}
	pick := func(dst **string, v *string) {
		if v != nil {
			*dst = v
		}
	}
	pick(&out.Title, over.Title)
	pick(&out.Description, over.Description)
	if over.Keywords != nil {
		out.Keywords = over.Keywords
	}
	pick(&out.Author, over.Author)
	if over.Robots != nil {
		out.Robots = over.Robots
	}
	pick(&out.CanonicalURL, over.CanonicalURL)
	pick(&out.OgTitle, over.OgTitle)
	pick(&out.OgDescription, over.OgDescription)
	pick(&out.OgImageURL, over.OgImageURL)
	pick(&out.OgImageFileID, over.OgImageFileID)
	pick(&out.OgImageAlt, over.OgImageAlt)
	pick(&out.OgSiteName, over.OgSiteName)
	pick(&out.OgURL, over.OgURL)
	pick(&out.TwitterTitle, over.TwitterTitle)
	pick(&out.TwitterDescription, over.TwitterDescription)
	pick(&out.TwitterImageURL, over.TwitterImageURL)
	pick(&out.TwitterImageFileID, over.TwitterImageFileID)
	pick(&out.TwitterImageAlt, over.TwitterImageAlt)
	pick(&out.TwitterSite, over.TwitterSite)
	pick(&out.TwitterCreator, over.TwitterCreator)
	pick(&out.ThemeColor, over.ThemeColor)
	return &out
}

// Action is a call to action of a page.
type Action struct {
	ActionID    string  `json:"actionId"`
	ActionIndex float64 `json:"actionIndex"`
	Purpose     string  `json:"purpose"`
	ButtonTitle string  `json:"buttonTitle"`
	ActionType  string  `json:"actionType"`
	URL         string  `json:"url"`
}

// Image is an image reference of an action card widget logo.
type Image struct {
	AltText string `json:"altText"`
	URL     string `json:"url"`
	FileID  string `json:"fileId"`
	AssetID string `json:"assetId"`
}

// Logo is one logo of an action card widget.
type Logo struct {
	Image Image `json:"image"`
}

// ActionCardWidget is a widget shown on an action card.
type ActionCardWidget struct {
	Type  string `json:"type"`
	Title string `json:"title"`
	Logos []Logo `json:"logos"`
}

// Link is one link of a footer group.
type Link struct {
	ID   string `json:"id"`
	Text string `json:"text"`
	URL  string `json:"url"`
}

// FooterLink is a titled group of footer links.
type FooterLink struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Links []Link `json:"links"`
}

// NavLink is a navigation link.
type NavLink struct {
	ID   string `json:"id"`
	Text string `json:"text"`
	URL  string `json:"url"`
	Type string `json:"type"`
}

// Script is a script embedded in a page.
type Script struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Content     string `json:"content"`
	Enabled     bool   `json:"enabled"`
}

// Page is a customer experience container.
type Page struct {
	ID                string
	TenantID          string
	Name              string
	Title             string
	PageContext       string
	BrandID           string
	PageType          string
	Status            string
	Flags             []string
	AudiencesCount    int64
	Actions           []Action
	ActionCardWidgets []ActionCardWidget
	FooterLinks       []FooterLink
	NavLinks          []NavLink
	Scripts           []Script
	HeaderActionID    *string
	Metadata          *Metadata
	CreatedAt         time.Time
	UpdatedAt         time.Time
	ArchivedAt        *time.Time
	DeletedAt         *time.Time
}

// Check applies the page's rules across fields: actionIds are unique (a rule across the
// items of a list, which the OpenAPI document states in words only) and headerActionId,
// when set, names one of the actions (ErrUnknownHeaderAct).
func (p *Page) Check() error {
	seen := make(map[string]int, len(p.Actions))
	for i, a := range p.Actions {
		if first, ok := seen[a.ActionID]; ok {
			return errkind.Invalid.At(fmt.Sprintf("actionId must be unique within the page: actions[%d] has the actionId %q "+
				"of actions[%d]: actionIds are unique within a page", i, a.ActionID, first), "actions", i, "actionId")
		}
		seen[a.ActionID] = i
	}
	if p.HeaderActionID == nil {
		return nil
	}
	if _, ok := seen[*p.HeaderActionID]; !ok {
		return ErrUnknownHeaderAct
	}
	return nil
}

// PagePatch is a partial update; nil fields stay as they are.
type PagePatch struct {
	Name              *string
	Title             *string
	PageContext       *string
	BrandID           *string
	PageType          *string
	Flags             *[]string
	Actions           *[]Action
	ActionCardWidgets *[]ActionCardWidget
	FooterLinks       *[]FooterLink
	NavLinks          *[]NavLink
	Scripts           *[]Script
	SetHeaderAction   bool
	HeaderActionID    *string // with SetHeaderAction: nil clears
	SetMetadata       bool
	Metadata          *Metadata // with SetMetadata: nil clears
}

// Apply changes p by patch; it returns Check's error when the result breaks a rule.
func (p *Page) Apply(patch PagePatch, now time.Time) error {
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = *v
		}
	}
	set(&p.Name, patch.Name)
	set(&p.Title, patch.Title)
	set(&p.PageContext, patch.PageContext)
	set(&p.BrandID, patch.BrandID)
	set(&p.PageType, patch.PageType)
	if patch.Flags != nil {
		p.Flags = *patch.Flags
	}
	if patch.Actions != nil {
		p.Actions = *patch.Actions
	}
	if patch.ActionCardWidgets != nil {
		p.ActionCardWidgets = *patch.ActionCardWidgets
	}
	if patch.FooterLinks != nil {
		p.FooterLinks = *patch.FooterLinks
	}
	if patch.NavLinks != nil {
		p.NavLinks = *patch.NavLinks
	}
	if patch.Scripts != nil {
		p.Scripts = *patch.Scripts
	}
	if patch.SetHeaderAction {
		p.HeaderActionID = patch.HeaderActionID
	}
	if patch.SetMetadata {
		p.Metadata = patch.Metadata
	}
	p.UpdatedAt = now
	return p.Check()
}

// Publish moves a draft or published page to published; an archived page must be restored first.
func (p *Page) Publish(now time.Time) error {
	if p.Status == PageArchived {
		return ErrPageArchived
	}
	if p.Status != PagePublished {
		p.Status, p.UpdatedAt = PagePublished, now
	}
	return nil
}

// Archive moves a page to archived (idempotent).
func (p *Page) Archive(now time.Time) {
	if p.Status != PageArchived {
		p.Status, p.ArchivedAt, p.UpdatedAt = PageArchived, &now, now
	}
}

// Restore brings an archived or deleted page back as a draft.
func (p *Page) Restore(now time.Time) error {
	if p.Status != PageArchived && p.DeletedAt == nil {
		return ErrNotRestorable
	}
	p.Status, p.ArchivedAt, p.DeletedAt, p.UpdatedAt = PageDraft, nil, nil, now
	return nil
}
