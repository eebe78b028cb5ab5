package pagelinks

import (
	"errors"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/customerapi/platform/libs/apierror"
	"github.com/customerapi/platform/libs/ids"
	"github.com/customerapi/platform/libs/pagination"
	"github.com/customerapi/platform/libs/request"
	"github.com/customerapi/platform/libs/tenant"
	"github.com/customerapi/platform/libs/timestamp"
)

// idPrefix is the TypeID prefix of page links.
const idPrefix = "pagelink"

// handlers serve the page link routes.
type handlers struct {
	store   *Store
	cursors *pagination.Codec
}

func (h *handlers) register(r fiber.Router) {
	r.Post("/page_links", h.create)
	r.Get("/page_links/search", h.search) // before /:page_link_id, which would match "search"
	r.Get("/page_links/:page_link_id", h.get)
	r.Delete("/page_links/:page_link_id", h.delete)
}

// --- shapes of the API

// The body of a new link. The OpenAPI document (PageLinkCreate) states its rules and has
// judged it before the handler runs: required fields, lengths, the target type, the
// path's characters, unknown fields. CheckTarget and NormalisePath apply the rules it
// states in words only.

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
	p, err := NormalisePath(in.Path)
	if err != nil {
		out = append(out, apierror.Issue{Code: "invalid_string", Message: "Invalid path: it " + err.Error(), Path: []any{"path"}})
	}
	for _, e := range CheckTarget(in.Target.TargetType, in.Target.AudienceID, in.Target.PageID) {
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

func view(l Link) linkView {
	return linkView{PageLinkID: l.ID, TenantDomainID: l.DomainID, Path: l.Path,
		Target:    targetView{TargetType: l.TargetType, AudienceID: l.AudienceID, PageID: l.PageID},
		CreatedAt: timestamp.Format(l.CreatedAt), UpdatedAt: timestamp.Format(l.UpdatedAt),
		DeletedAt: timestamp.FormatPtr(l.DeletedAt)}
}

// --- handlers

func (h *handlers) create(c *fiber.Ctx) error {
	var in linkCreate
	if err := request.Decode(c, &in); err != nil {
		return err
	}
	path, issues := in.check()
	if len(issues) > 0 {
		return apierror.Validation(apierror.FieldBody, issues...)
	}
	now := timestamp.Truncate(time.Now())
	l := Link{TenantID: tenant.From(c), ID: ids.New(idPrefix), DomainID: in.TenantDomainID.Ptr(), Path: path,
		PathKey: PathKey(path), TargetType: in.Target.TargetType, AudienceID: in.Target.AudienceID,
		CreatedAt: now, UpdatedAt: now}
	if in.Target.PageID != nil {
		l.PageID = *in.Target.PageID
	}
	out, err := h.store.Create(c.UserContext(), l)
	if err != nil {
		return mapError(err)
	}
	return c.Status(fiber.StatusCreated).JSON(view(out))
}

func (h *handlers) get(c *fiber.Ctx) error {
	l, err := h.store.Get(c.UserContext(), tenant.From(c), c.Params("page_link_id"))
	if err != nil {
		return mapError(err)
	}
	return c.JSON(view(l))
}

func (h *handlers) delete(c *fiber.Ctx) error {
	if err := h.store.Delete(c.UserContext(), tenant.From(c), c.Params("page_link_id"), timestamp.Truncate(time.Now())); err != nil {
		return mapError(err)
	}
	return c.SendStatus(fiber.StatusNoContent)
}

func (h *handlers) search(c *fiber.Ctx) error {
	// The document judged the parameters (lengths, the target type's values).
	q := request.NewQuery(c)
	s := Search{Query: q.String("query"), PageID: q.String("pageId"), TargetType: q.String("targetType")}
	if d, ok := q.Raw("tenantDomainId"); ok {
		s.DomainID = &d
	}
	scope := pagination.Scope(tenant.From(c), "page_links", request.Value(s.DomainID), s.Query, s.TargetType, s.PageID)
	p := h.cursors.Parse(q, scope)
	after, err := ParseAfter(p.After)
	if err != nil {
		q.Fail("cursor", "invalid_cursor", "Invalid cursor: "+err.Error())
	}
	if err := q.Err(); err != nil {
		return err
	}
	links, total, err := h.store.Search(c.UserContext(), tenant.From(c), s, after, p.Limit+1)
	if err != nil {
		return mapError(err)
	}
	views := make([]linkView, len(links))
	for i, l := range links {
		views[i] = view(l)
	}
	return c.JSON(pagination.Build(h.cursors, p, views, &total, func(v linkView) []string {
		return After{PathKey: PathKey(v.Path), ID: v.PageLinkID}.Keys()
	}))
}

func mapError(err error) error {
	switch {
	case errors.Is(err, ErrNotFound):
		return apierror.NotFound("page link not found")
	case errors.Is(err, ErrPageNotFound):
		return apierror.NotFound("target page not found")
	case errors.Is(err, ErrAudienceNotFound):
		return apierror.NotFound("target audience not found")
	case errors.Is(err, ErrPathTaken):
		return apierror.Conflict("this path is already linked on this domain")
	}
	return apierror.Internal(err)
}
