package pagelinks

import (
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

type targetView struct {
	TargetType string  `json:"targetType"`
	AudienceID *string `json:"audienceId,omitempty"`
	PageID     string  `json:"pageId"`
}

type linkView struct {
	PageLinkID     string     `json:"pageLinkId"`
	TenantDomainID *string    `json:"tenantDomainId"`
	Path           string     `json:"path"`
	Target         targetView `json:"target"`
	CreatedAt      string     `json:"createdAt"`
	UpdatedAt      string     `json:"updatedAt"`
	DeletedAt      *string    `json:"deletedAt"`
}

func viewPageLink(l pagelink.Link) linkView {
	return linkView{PageLinkID: l.ID, TenantDomainID: l.DomainID, Path: l.Path,
		Target:    targetView{TargetType: l.TargetType, AudienceID: l.AudienceID, PageID: l.PageID},
		CreatedAt: timestamp.Format(l.CreatedAt), UpdatedAt: timestamp.Format(l.UpdatedAt),
		DeletedAt: timestamp.FormatPtr(l.DeletedAt)}
}
