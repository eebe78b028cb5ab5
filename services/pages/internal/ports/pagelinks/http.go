// Package pagelinks serves the page link routes over HTTP.
package pagelinks

import (
	"errors"

	"github.com/gofiber/fiber/v2"

	"github.com/customerapi/platform/api/apitypes"
	"github.com/customerapi/platform/libs/apierror"
	"github.com/customerapi/platform/libs/pagination"
	"github.com/customerapi/platform/libs/request"
	"github.com/customerapi/platform/libs/tenant"
	app "github.com/customerapi/platform/services/pages/internal/app/pagelinks"
	"github.com/customerapi/platform/services/pages/internal/domain"
	"github.com/customerapi/platform/services/pages/internal/domain/pagelink"
)

// Handlers serve the page link routes.
type Handlers struct {
	App     *app.Service
	Cursors *pagination.Codec
}

// Register mounts the routes on the tenant-scoped /v0 router.
func (h *Handlers) Register(r fiber.Router) {
	r.Post("/page_links", h.create)
	r.Get("/page_links/search", h.search) // before /:page_link_id, which would match "search"
	r.Get("/page_links/:page_link_id", h.get)
	r.Delete("/page_links/:page_link_id", h.delete)
}

func (h *Handlers) create(c *fiber.Ctx) error {
	var in linkCreate
	if err := request.Decode(c, &in); err != nil {
		return err
	}
	path, issues := in.check()
	if len(issues) > 0 {
		return apierror.Validation(apierror.FieldBody, issues...)
	}
	l := pagelink.Link{TenantID: tenant.From(c), DomainID: in.TenantDomainID.Ptr(), Path: path,
		TargetType: in.Target.TargetType, AudienceID: in.Target.AudienceID}
	if in.Target.PageID != nil {
		l.PageID = *in.Target.PageID
	}
	// A missing page or audience here is the link's target, and its answer says so.
	out, err := h.App.Create(c.UserContext(), l)
	switch {
	case errors.Is(err, domain.ErrPageNotFound):
		return apierror.NotFound("target page not found")
	case errors.Is(err, domain.ErrAudienceNotFound):
		return apierror.NotFound("target audience not found")
	case err != nil:
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(viewPageLink(out))
}

func (h *Handlers) get(c *fiber.Ctx) error {
	l, err := h.App.Get(c.UserContext(), tenant.From(c), c.Params("page_link_id"))
	if err != nil {
		return err
	}
	return c.JSON(viewPageLink(l))
}

func (h *Handlers) delete(c *fiber.Ctx) error {
	if err := h.App.Delete(c.UserContext(), tenant.From(c), c.Params("page_link_id")); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}

func (h *Handlers) search(c *fiber.Ctx) error {
	// The document judged the parameters (lengths, the target type's values).
	q := request.NewQuery(c)
	s := pagelink.Search{Query: q.String("query"), PageID: q.String("pageId"), TargetType: q.String("targetType")}
	if d, ok := q.Raw("tenantDomainId"); ok {
		s.DomainID = &d
	}
	scope := pagination.Scope(tenant.From(c), "page_links", request.Value(s.DomainID), s.Query, s.TargetType, s.PageID)
	p := h.Cursors.Parse(q, scope)
	after, err := pagelink.ParseAfter(p.After)
	if err != nil {
		q.Fail("cursor", "invalid_cursor", "Invalid cursor: "+err.Error())
	}
	if err := q.Err(); err != nil {
		return err
	}
	links, total, err := h.App.Search(c.UserContext(), tenant.From(c), s, after, p.Limit+1)
	if err != nil {
		return err
	}
	views := make([]apitypes.PageLink, len(links))
	for i, l := range links {
		views[i] = viewPageLink(l)
	}
	return c.JSON(pagination.Build(h.Cursors, p, views, &total, func(v apitypes.PageLink) []string {
		return pagelink.After{PathKey: pagelink.PathKey(v.Path), ID: v.PageLinkId}.Keys()
	}))
}
