package pagelinks

import (
	"github.com/customerapi/platform/api/apitypes"
	"github.com/customerapi/platform/libs/apierror"
	"github.com/customerapi/platform/libs/request"
	"github.com/customerapi/platform/libs/timestamp"
	"github.com/customerapi/platform/services/pages/internal/domain/pagelink"
)

// The body of a new link. The OpenAPI document (PageLinkCreate) states its rules and has
// judged it before the handler runs: required fields, lengths, the target type, the
// path's characters, unknown fields. pagelink.CheckTarget and pagelink.NormalisePath apply
// the rules it states in words only.

type targetIn struct {
	TargetType string  `json:"targetType"`
	AudienceID *string `json:"audienceId"`
	PageID     *string `json:"pageId"`
}

type linkCreate struct {
	Path           string                   `json:"path"`
	TenantDomainID request.Nullable[string] `json:"tenantDomainId"`
	Target         targetIn                 `json:"target"`
}

// check applies the rules the document cannot state and returns the normalised path.
func (in *linkCreate) check() (string, []apierror.Issue) {
	var out []apierror.Issue
	p, err := pagelink.NormalisePath(in.Path)
	if err != nil {
		out = append(out, apierror.Issue{Code: "invalid_string", Message: "Invalid path: it " + err.Error(), Path: []any{"path"}})
	}
	for _, e := range pagelink.CheckTarget(in.Target.TargetType, in.Target.AudienceID, in.Target.PageID) {
		out = append(out, apierror.Issue{Code: e.Code, Message: e.Message, Path: []any{"target", e.Field}})
	}
	return p, out
}

// viewPageLink is the document's PageLink; its target is the audience target when the
// link names an audience, else the page target.
func viewPageLink(l pagelink.Link) apitypes.PageLink {
	v := apitypes.PageLink{PageLinkId: l.ID, TenantDomainId: l.DomainID, Path: l.Path,
		CreatedAt: timestamp.Format(l.CreatedAt), UpdatedAt: timestamp.Format(l.UpdatedAt),
		DeletedAt: timestamp.FormatPtr(l.DeletedAt)}
	// Either target is strings alone, which always marshal.
	if l.AudienceID != nil {
		_ = v.Target.FromPageLinkAudienceTarget(apitypes.PageLinkAudienceTarget{
			TargetType: apitypes.PageLinkAudienceTargetTargetType(l.TargetType), AudienceId: *l.AudienceID, PageId: l.PageID})
	} else {
		_ = v.Target.FromPageLinkPageTarget(apitypes.PageLinkPageTarget{
			TargetType: apitypes.PageLinkPageTargetTargetType(l.TargetType), PageId: l.PageID})
	}
	return v
}
