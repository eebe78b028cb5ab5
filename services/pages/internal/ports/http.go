// Package ports serves pages, audiences, versions and messages over HTTP: it maps
// requests to use cases and results to the API's shapes, and nothing else. The audience
// sessions and the page links have their own packages below.
package ports

import (
	"context"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/customerapi/platform/api/apitypes"
	"github.com/customerapi/platform/libs/apierror"
	"github.com/customerapi/platform/libs/pagination"
	"github.com/customerapi/platform/libs/request"
	"github.com/customerapi/platform/libs/tenant"
	"github.com/customerapi/platform/services/pages/internal/app"
	"github.com/customerapi/platform/services/pages/internal/domain"
)

// Handlers serve the pages core routes.
type Handlers struct {
	App     *app.Service
	Cursors *pagination.Codec
}

// Register mounts the routes on the tenant-scoped /v0 router.
func (h *Handlers) Register(r fiber.Router) {
	r.Get("/pages", h.listPages)
	r.Post("/pages", h.createPage)
	r.Get("/pages/:page_id", h.getPage)
	r.Patch("/pages/:page_id", h.updatePage)
	r.Delete("/pages/:page_id", h.deletePage)
	r.Post("/pages/:page_id/publish", h.action(h.App.PublishPage))
	r.Post("/pages/:page_id/archive", h.action(h.App.ArchivePage))
	r.Post("/pages/:page_id/restore", h.action(h.App.RestorePage))
	r.Get("/pages/:page_id/audiences", h.listAudiences)
	r.Post("/pages/:page_id/audiences", h.createAudience)
	r.Get("/pages/:page_id/audiences/:audience_id", h.getAudience)
	r.Patch("/pages/:page_id/audiences/:audience_id", h.updateAudience)
	r.Post("/pages/:page_id/audiences/:audience_id/archive", h.archiveAudience)
	r.Get("/pages/:page_id/audiences/:audience_id/versions", h.listVersions)
	r.Post("/pages/:page_id/audiences/:audience_id/versions", h.createVersion)
	r.Get("/pages/:page_id/audiences/:audience_id/messages", h.getMessages)
	r.Post("/pages/:page_id/audiences/:audience_id/messages", h.addMessage)
}

// --- pages

func (h *Handlers) createPage(c *fiber.Ctx) error {
	var in pageCreate
	if err := request.Decode(c, &in); err != nil {
		return err
	}
	p := in.domain()
	p.TenantID = tenant.From(c)
	p, err := h.App.CreatePage(c.UserContext(), p)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(viewPage(p))
}

func (h *Handlers) getPage(c *fiber.Ctx) error {
	p, err := h.App.GetPage(c.UserContext(), tenant.From(c), c.Params("page_id"))
	if err != nil {
		return err
	}
	return c.JSON(viewPage(p))
}

func (h *Handlers) updatePage(c *fiber.Ctx) error {
	var in pageUpdate
	if err := request.Decode(c, &in); err != nil {
		return err
	}
	p, err := h.App.UpdatePage(c.UserContext(), tenant.From(c), c.Params("page_id"), in.domain())
	if err != nil {
		return err
	}
	return c.JSON(viewPage(p))
}

func (h *Handlers) deletePage(c *fiber.Ctx) error {
	if err := h.App.DeletePage(c.UserContext(), tenant.From(c), c.Params("page_id")); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}

// action serves a body-less page operation (the document allows `{}` or no body).
func (h *Handlers) action(op func(ctx context.Context, tenantID, id string) (domain.Page, error)) fiber.Handler {
	return func(c *fiber.Ctx) error {
		p, err := op(c.UserContext(), tenant.From(c), c.Params("page_id"))
		if err != nil {
			return err
		}
		return c.JSON(viewPage(p))
	}
}

// pageAfterID parses limit and cursor of a list keyed by ID alone.
func (h *Handlers) pageAfterID(c *fiber.Ctx, scope ...string) (pagination.Params, string, error) {
	q := request.NewQuery(c)
	p := h.Cursors.Parse(q, pagination.Scope(append([]string{tenant.From(c)}, scope...)...))
	after := ""
	if p.After != nil {
		if len(p.After) != 1 || p.After[0] == "" {
			q.Fail("cursor", "invalid_cursor", "Invalid cursor: malformed position")
		} else {
			after = p.After[0]
		}
	}
	return p, after, q.Err()
}

func (h *Handlers) listPages(c *fiber.Ctx) error {
	p, after, err := h.pageAfterID(c, "pages")
	if err != nil {
		return err
	}
	pages, total, err := h.App.ListPages(c.UserContext(), tenant.From(c), after, p.Limit+1)
	if err != nil {
		return err
	}
	views := pagination.Map(pages, viewPage)
	return c.JSON(pagination.Build(h.Cursors, p, views, &total, func(v apitypes.Page) []string { return []string{v.PageId} }))
}

// --- audiences

func (h *Handlers) createAudience(c *fiber.Ctx) error {
	var in audienceCreate
	if err := request.Decode(c, &in); err != nil {
		return err
	}
	a := domain.Audience{TenantID: tenant.From(c), PageID: c.Params("page_id"), CustomName: in.CustomName,
		ActionFormIDOverride: in.ActionFormIDOverride, ActionFormInstructionsOverride: in.ActionFormInstructionsOverride,
		ActionURLOverride: in.ActionURLOverride, SupplementaryContext: in.SupplementaryContext,
		MetadataOverride: in.MetadataOverride}
	if in.PublishBehavior != nil {
		a.PublishBehavior = *in.PublishBehavior
	}
	a, err := h.App.CreateAudience(c.UserContext(), a)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(viewAudience(a))
}

func (h *Handlers) getAudience(c *fiber.Ctx) error {
	a, err := h.App.GetAudience(c.UserContext(), tenant.From(c), c.Params("page_id"), c.Params("audience_id"))
	if err != nil {
		return err
	}
	return c.JSON(viewAudience(a))
}

func (h *Handlers) updateAudience(c *fiber.Ctx) error {
	var in audienceUpdate
	if err := request.Decode(c, &in); err != nil {
		return err
	}
	a, err := h.App.UpdateAudience(c.UserContext(), tenant.From(c), c.Params("page_id"), c.Params("audience_id"), in.domain())
	if err != nil {
		return err
	}
	return c.JSON(viewAudience(a))
}

func (h *Handlers) archiveAudience(c *fiber.Ctx) error {
	a, err := h.App.ArchiveAudience(c.UserContext(), tenant.From(c), c.Params("page_id"), c.Params("audience_id"))
	if err != nil {
		return err
	}
	return c.JSON(viewAudience(a))
}

func (h *Handlers) listAudiences(c *fiber.Ctx) error {
	pageID := c.Params("page_id")
	p, after, err := h.pageAfterID(c, "audiences", pageID)
	if err != nil {
		return err
	}
	list, total, err := h.App.ListAudiences(c.UserContext(), tenant.From(c), pageID, after, p.Limit+1)
	if err != nil {
		return err
	}
	views := pagination.Map(list, viewAudience)
	return c.JSON(pagination.Build(h.Cursors, p, views, &total, func(v apitypes.Audience) []string { return []string{v.AudienceId} }))
}

// --- versions

func (h *Handlers) createVersion(c *fiber.Ctx) error {
	var in versionCreate
	if err := request.Decode(c, &in); err != nil {
		return err
	}
	v, created, err := h.App.CreateVersion(c.UserContext(), tenant.From(c), c.Params("page_id"), c.Params("audience_id"), in.OperationKey)
	if err != nil {
		return err
	}
	status := fiber.StatusOK
	if created {
		status = fiber.StatusCreated
	}
	return c.Status(status).JSON(viewVersion(&v, false))
}

func (h *Handlers) listVersions(c *fiber.Ctx) error {
	pageID, audienceID := c.Params("page_id"), c.Params("audience_id")
	q := request.NewQuery(c)
	// include is a comma-separated list whose only value is snapshot (the document's
	// pattern refused anything else).
	withSnapshot := false
	for _, part := range strings.Split(q.String("include"), ",") {
		withSnapshot = withSnapshot || strings.TrimSpace(part) == "snapshot"
	}
	p := h.Cursors.Parse(q, pagination.Scope(tenant.From(c), "versions", pageID, audienceID))
	var below int64
	if p.After != nil {
		n, err := strconv.ParseInt(strings.Join(p.After, ""), 10, 64)
		if len(p.After) != 1 || err != nil || n < 1 {
			q.Fail("cursor", "invalid_cursor", "Invalid cursor: malformed position")
		}
		below = n
	}
	if err := q.Err(); err != nil {
		return err
	}
	list, total, err := h.App.ListVersions(c.UserContext(), tenant.From(c), pageID, audienceID, below, p.Limit+1)
	if err != nil {
		return err
	}
	views := make([]apitypes.AudienceVersion, len(list))
	for i := range list {
		views[i] = *viewVersion(&list[i], withSnapshot)
	}
	return c.JSON(pagination.Build(h.Cursors, p, views, &total, func(v apitypes.AudienceVersion) []string {
		return []string{strconv.Itoa(v.VersionNumber)}
	}))
}

// --- messages

func (h *Handlers) getMessages(c *fiber.Ctx) error {
	m, err := h.App.Messages(c.UserContext(), tenant.From(c), c.Params("page_id"), c.Params("audience_id"))
	if err != nil {
		return err
	}
	return c.JSON(viewMessages(m))
}

func (h *Handlers) addMessage(c *fiber.Ctx) error {
	var in messageCreate
	if err := request.Decode(c, &in); err != nil {
		return err
	}
	changes := make([]app.NewChange, len(in.Changes))
	var issues []apierror.Issue
	for i, ch := range in.Changes {
		if msg := domain.CheckChange(ch.Field, ch.NewValue); msg != "" {
			issues = append(issues, apierror.Issue{Code: "too_big", Message: msg, Path: []any{"changes", i, "newValue"}})
		}
		changes[i] = app.NewChange{Field: ch.Field, NewValue: ch.NewValue}
	}
	if len(issues) > 0 {
		return apierror.Validation(apierror.FieldBody, issues...)
	}
	m, err := h.App.AddMessage(c.UserContext(), tenant.From(c), c.Params("page_id"), c.Params("audience_id"), in.Content, changes)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(viewMessage(m))
}
