// Package sessions serves the audience session routes over HTTP.
package sessions

import (
	"errors"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/customerapi/platform/api/apitypes"
	"github.com/customerapi/platform/libs/apierror"
	"github.com/customerapi/platform/libs/pagination"
	"github.com/customerapi/platform/libs/request"
	"github.com/customerapi/platform/libs/tenant"
	app "github.com/customerapi/platform/services/pages/internal/app/sessions"
	"github.com/customerapi/platform/services/pages/internal/domain"
	"github.com/customerapi/platform/services/pages/internal/domain/session"
)

// Handlers serve the audience session routes.
type Handlers struct {
	App     *app.Service
	Cursors *pagination.Codec
}

// Register mounts the routes on the tenant-scoped /v0 router.
func (h *Handlers) Register(r fiber.Router) {
	r.Post("/pages/:page_id/audience_sessions", h.record)
	r.Get("/pages/:page_id/audience_sessions", h.list)
	r.Get("/pages/:page_id/audience_sessions/:audience_session_id", h.get)
}

func (h *Handlers) record(c *fiber.Ctx) error {
	var in sessionCreate
	if err := request.Decode(c, &in); err != nil {
		return err
	}
	s, err := in.domain(tenant.From(c), c.Params("page_id"))
	if err != nil {
		return apierror.Internal(err)
	}
	if problems := s.Check(); len(problems) > 0 {
		issues := make([]apierror.Issue, len(problems))
		for i, p := range problems {
			issues[i] = apierror.Issue{Code: p.Code, Message: p.Message, Path: p.Path}
		}
		return apierror.Validation(apierror.FieldBody, issues...)
	}
	out, replayed, err := h.App.Record(c.UserContext(), s)
	switch {
	case errors.Is(err, domain.ErrAudienceNotFound): // the one named in the body
		return apierror.NotFound("audience not found under this page")
	case err != nil:
		return err
	}
	if replayed {
		return c.JSON(viewSession(out))
	}
	return c.Status(fiber.StatusCreated).JSON(viewSession(out))
}

func (h *Handlers) get(c *fiber.Ctx) error {
	s, err := h.App.Get(c.UserContext(), tenant.From(c), c.Params("page_id"), c.Params("audience_session_id"))
	if err != nil {
		return err
	}
	return c.JSON(viewSession(s))
}

func (h *Handlers) list(c *fiber.Ctx) error {
	pageID := c.Params("page_id")
	q := request.NewQuery(c)
	// The document judged the parameters (date-times, the audienceId's length); the rule
	// across two of them is the filter's.
	f := session.Filter{Start: q.Time("startDate"), End: q.Time("endDate"), AudienceID: q.String("audienceId")}
	if err := f.Check(); err != nil {
		q.Fail("endDate", "custom", err.Error())
	}
	scope := pagination.Scope(tenant.From(c), "audience_sessions", pageID, f.AudienceID, fmtTime(f.Start), fmtTime(f.End))
	p := h.Cursors.Parse(q, scope)
	after, err := session.ParseAfter(p.After)
	if err != nil {
		q.Fail("cursor", "invalid_cursor", "Invalid cursor: "+err.Error())
	}
	if err := q.Err(); err != nil {
		return err
	}
	sessions, total, err := h.App.List(c.UserContext(), tenant.From(c), pageID, f, after, p.Limit+1)
	if err != nil {
		return err
	}
	byID := make(map[string]session.Session, len(sessions))
	views := make([]apitypes.Session, len(sessions))
	for i, s := range sessions {
		views[i], byID[s.ID] = viewSession(s), s
	}
	return c.JSON(pagination.Build(h.Cursors, p, views, &total, func(v apitypes.Session) []string {
		s := byID[v.AudienceSessionId]
		return session.After{StartedAt: s.StartedAt, ID: s.ID}.Keys()
	}))
}

// fmtTime renders a filter's time for a cursor's scope ("" when absent).
func fmtTime(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}
